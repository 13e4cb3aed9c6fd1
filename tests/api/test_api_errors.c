#define _POSIX_C_SOURCE 200809L
/* The library's failures: each returns its status with a one-line message
 * on its handle and through the log callback, and nothing is printed (the
 * test's stderr goes to a file that must stay empty) and nothing exits. */
#include "lbknn.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int failures, logged;
static char last_logged[1024];

static void on_log(void *user, lbknn_log_level level, const char *message)
{
    (void)user;
    if (level == LBKNN_LOG_ERROR) {
        logged++;
        snprintf(last_logged, sizeof last_logged, "%s", message);
    }
}

static void expect(const char *what, int rc, int want, const char *message, const char *contains)
{
    const bool ok = rc == want && strstr(message, contains) != NULL &&
                    (want == LBKNN_OK || strcmp(message, last_logged) == 0);
    printf("%s %s: status %d (%s), message \"%s\"\n", ok ? "ok  " : "FAIL", what, rc,
           lbknn_status_string((lbknn_status)rc), message);
    failures += !ok;
}

int main(void)
{
    char path[] = "/tmp/lbknn-api-errors-XXXXXX";
    const int log_fd = mkstemp(path);
    const int saved = dup(2);
    dup2(log_fd, 2); /* the library must write nothing here */
    lbknn_set_log_callback(on_log, NULL);

    lbknn_options *o = NULL;
    lbknn_options_create(&o);
    expect("unknown key", lbknn_options_set(o, "knn.kk", "3"), LBKNN_ERR_CONFIG,
           lbknn_options_error(o), "knn.kk: not an option of the library (it takes: ");
    expect("bad value", lbknn_options_set(o, "knn.k", "0"), LBKNN_ERR_CONFIG,
           lbknn_options_error(o), "option knn.k=0: ");
    expect("good value", lbknn_options_set(o, "knn.k", "3"), LBKNN_OK, lbknn_options_error(o),
           "");
    /* A job key the library does not use is refused, naming the ones it
     * takes (a whole section as section.*), and changes nothing. */
    static const char *const refused[][2] = {
        {"task", "graph"},           {"knn.weights", "distance"},   {"knn.temperature", "2"},
        {"query.path", "q.fvecs"},   {"synthetic.points", "10"},    {"mpi.balance", "queries"},
        {"index.path", "saved.idx"}, {"output.neighbors", "n.txt"}, {"run.max_hours", "1"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char want[512];
        snprintf(want, sizeof want,
                 "%s: not an option of the library (it takes: knn.k, knn.metric, knn.engine, "
                 "device.*, tree.*, tuning.*, mpi.partition, mpi.merge, reference.type)",
                 refused[i][0]);
        char what[64];
        snprintf(what, sizeof what, "refused %s", refused[i][0]);
        expect(what, lbknn_options_set(o, refused[i][0], refused[i][1]), LBKNN_ERR_CONFIG,
               lbknn_options_error(o), want);
    }
    /* Every key it takes, at a value of its own. */
    static const char *const taken[][2] = {
        {"knn.k", "4"},
        {"knn.metric", "l1"},
        {"knn.engine", "brute"},
        {"device.type", "any"},
        {"device.list", "[0]"},
        {"device.threads", "0"},
        {"device.batch", "64"},
        {"device.groups", "0"},
        {"device.memory_mb", "0"},
        {"tree.split", "widest"},
        {"tree.sort", "auto"},
        {"tree.verify", "true"},
        {"tuning.cache", "false"},
        {"tuning.lanes", "4"},
        {"tuning.block_queries", "2"},
        {"tuning.block_vectors", "2"},
        {"tuning.tile_blocks", "4"},
        {"tuning.slice", "64"},
        {"tuning.segment_log2", "8"},
        {"mpi.partition", "shard"},
        {"mpi.merge", "reduce"},
        {"reference.type", "uint8"},
    };
    lbknn_options *all = NULL;
    lbknn_options_create(&all);
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++) {
        char what[64];
        snprintf(what, sizeof what, "taken %s", taken[i][0]);
        expect(what, lbknn_options_set(all, taken[i][0], taken[i][1]), LBKNN_OK,
               lbknn_options_error(all), "");
    }
    lbknn_options_destroy(all);
    char error[512] = "";
    lbknn_context *ctx = NULL;
    lbknn_options *gpu = NULL;
    lbknn_options_create(&gpu);
    lbknn_options_set(gpu, "device.list", "[99]");
    expect("no such device", lbknn_context_create(gpu, NULL, &ctx, error, sizeof error),
           LBKNN_ERR_DEVICE, error, "99");
    expect("context", lbknn_context_create(o, NULL, &ctx, error, sizeof error), LBKNN_OK, error,
           "");
    if (!ctx) {
        fprintf(stderr, "no context: %s\n", error);
        return 1;
    }
    const float pts[] = {0, 0, 1, 1, NAN, 2, 3, 3};
    const int32_t labels[] = {0, 1, -1, 0};
    lbknn_index *ix = NULL;
    expect("non-finite point", lbknn_index_build(ctx, o, 4, 2, pts, NULL, NULL, &ix),
           LBKNN_ERR_INPUT, lbknn_context_error(ctx),
           "points[2][0] = nan: not a finite number (NaN or infinity)");
    expect("negative label", lbknn_index_build(ctx, o, 2, 2, pts, labels + 1, NULL, &ix),
           LBKNN_ERR_INPUT, lbknn_context_error(ctx), "labels[1] = -1: labels must be >= 0");
    expect("no rows", lbknn_index_build(ctx, o, 0, 2, pts, NULL, NULL, &ix), LBKNN_ERR_USAGE,
           lbknn_context_error(ctx), "no reference rows");
    expect("tree with ip", lbknn_options_set(o, "knn.metric", "ip"), LBKNN_OK, "", "");
    lbknn_options_set(o, "knn.engine", "kdtree");
    expect("tree with ip", lbknn_index_build(ctx, o, 2, 2, pts, NULL, NULL, &ix),
           LBKNN_ERR_CONFIG, lbknn_context_error(ctx), "ip");
    lbknn_options_set(o, "knn.engine", "auto");
    lbknn_options_set(o, "knn.metric", "l2");
    expect("build", lbknn_index_build(ctx, o, 2, 2, pts, NULL, NULL, &ix), LBKNN_OK,
           lbknn_context_error(ctx), "");
    int64_t ids[8];
    float dist[8];
    int32_t pred[2];
    double values[2];
    expect("k above knn.k", lbknn_index_search(ix, 1, pts, 4, ids, dist), LBKNN_ERR_USAGE,
           lbknn_index_error(ix), "k = 4: must be 1 .. 3");
    expect("non-finite query", lbknn_index_search(ix, 3, pts, 2, ids, dist), LBKNN_ERR_INPUT,
           lbknn_index_error(ix), "queries[2][0] = nan");
    expect("classify without labels",
           lbknn_index_classify(ix, 1, pts, 2, LBKNN_WEIGHTS_UNIFORM, 1, pred, NULL),
           LBKNN_ERR_USAGE, lbknn_index_error(ix), "without labels");
    expect("regress without targets",
           lbknn_index_regress(ix, 1, pts, 2, LBKNN_WEIGHTS_UNIFORM, values), LBKNN_ERR_USAGE,
           lbknn_index_error(ix), "without targets");
    expect("search", lbknn_index_search(ix, 2, pts, 3, ids, dist), LBKNN_OK,
           lbknn_index_error(ix), "");
    const bool padded = ids[0] == 0 && ids[1] == 1 && ids[2] == -1 && isinf(dist[2]);
    printf("%s fewer rows than k: ids %lld %lld %lld, distance %g\n", padded ? "ok  " : "FAIL",
           (long long)ids[0], (long long)ids[1], (long long)ids[2], dist[2]);
    failures += !padded;
    lbknn_index_destroy(ix);
    lbknn_context_destroy(ctx);
    lbknn_options_destroy(o);
    lbknn_options_destroy(gpu);

    fflush(stderr);
    const off_t printed = lseek(log_fd, 0, SEEK_END);
    dup2(saved, 2);
    if (printed != 0) {
        fprintf(stderr, "FAIL the library printed %lld bytes on stderr (%s)\n",
                (long long)printed, path);
        failures++;
    } else {
        unlink(path);
    }
    printf("%d error(s) logged through the callback; %s\n", logged, failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
