#define _POSIX_C_SOURCE 200809L
/* Two contexts in two threads (lbknn.h, "Threads"): each thread builds and
 * searches its own data with its own options, engine and log callback, at
 * the same moments as the other (a barrier before every step), and checks
 * its results against the independent host oracle (tests/oracle) and that
 * every message it sees is its own: the handles' messages name its own
 * values, its callback is called on its own thread only and gets its
 * handles' messages. With --mpi (under mpirun) the first context is over
 * MPI_COMM_WORLD, so its messages carry "rank R: " while the second's, of
 * this process alone, carry none: the rank is the context's, not the
 * process's. The same program runs under Helgrind (api.threads.helgrind).
 * Usage: test_api_threads [--mpi] [--rounds N] [--repeats N] [--shrink S] */
#include "knn_oracle.h"
#include "lbknn.h"

#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    /* what the thread does */
    const char *metric; /* knn.metric */
    int oracle_metric;  /* its number in the oracle */
    const char *engine;
    uint32_t n, nq;
    int dim, k;
    uint64_t seed;
    lbknn_log_level level;
    int nan_row;     /* a failing build's row: its message names it */
    const char *key; /* a failing lbknn_options_set: its message names it */
    const char *value;
    bool over_world; /* the context over MPI_COMM_WORLD (with --mpi) */
    /* what it saw */
    pthread_t thread;
    int errors, foreign, too_verbose, failures;
    char last_error[1024];
} worker;

/* Both threads begin each step of a round together; a thread that cannot
 * run a round still waits ROUND_STEPS times, so the other never hangs. */
/* Under AddressSanitizer (the sanitized pass): PoCL's LLVM gives each
 * thread that starts PoCL or compiles a kernel an alternate signal stack
 * from malloc, and ASan, as the thread ends, takes any alternate stack for
 * its own and fails to unmap it ("unable to unmap": a CHECK failure in
 * every run). ASan's own alternate stack is off for this program only;
 * ASAN_OPTIONS adds to this default. docs/library.md, "Threads", says the
 * same to callers. A plain build never calls it. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "use_sigaltstack=0"; }

static pthread_barrier_t step;
#define ROUND_STEPS 5
/* Each error step repeats its call: the more of them overlap the other
 * thread's, the likelier a shared sink or capture shows (Helgrind sees one
 * in any case). */
static int rounds = 2, repeats = 30, rank, ranks = 1;
static uint32_t shrink = 1; /* --shrink S: the rows and queries / S (Helgrind's run) */
static bool mpi;

/* The process's callback (lbknn_set_log_callback): the options' messages,
 * from both threads at once. */
static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static int process_errors;

static void on_process_log(void *user, lbknn_log_level level, const char *message)
{
    (void)user;
    (void)message;
    pthread_mutex_lock(&process_lock);
    process_errors += level == LBKNN_LOG_ERROR;
    pthread_mutex_unlock(&process_lock);
}

/* A context's callback: `user` is its worker. */
static void on_context_log(void *user, lbknn_log_level level, const char *message)
{
    worker *w = user;
    w->foreign += !pthread_equal(pthread_self(), w->thread);
    w->too_verbose += level > w->level;
    if (level == LBKNN_LOG_ERROR) {
        w->errors++;
        snprintf(w->last_error, sizeof w->last_error, "%s", message);
    }
}

#define CHECK(w, cond, ...)                                                                      \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "FAIL rank %d %s/%s %s:%d: ", rank, (w)->metric, (w)->engine,        \
                    __FILE__, __LINE__);                                                         \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fprintf(stderr, "\n");                                                               \
            (w)->failures++;                                                                     \
        }                                                                                        \
    } while (0)

/* The message a handle of w's context must hold: its rank's prefix when
 * the context spans ranks, then `text`. */
static void check_message(worker *w, const char *what, const char *message, const char *text)
{
    char prefix[32] = "";
    if (w->over_world && ranks > 1)
        snprintf(prefix, sizeof prefix, "rank %d: ", rank);
    CHECK(w,
          strncmp(message, prefix, strlen(prefix)) == 0 &&
              (prefix[0] || strncmp(message, "rank ", 5) != 0) &&
              strstr(message, text) == message + strlen(prefix),
          "%s: message \"%s\", expected \"%s%s...\"", what, message, prefix, text);
    CHECK(w, strcmp(w->last_error, message) == 0,
          "%s: the callback's last error \"%s\", the handle's \"%s\"", what, w->last_error,
          message);
}

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

typedef struct {
    float *ref, *queries, *dist;
    uint32_t *index;
} data;

/* A coarse grid (exact ties, so the (distance, id) order shows) and the
 * oracle's lists. */
static bool make_data(const worker *w, data *d)
{
    uint64_t s = w->seed;
    const size_t slots = (size_t)w->nq * (size_t)w->k;
    d->ref = malloc((size_t)w->n * (size_t)w->dim * sizeof *d->ref);
    d->queries = malloc((size_t)w->nq * (size_t)w->dim * sizeof *d->queries);
    d->dist = malloc(slots * sizeof *d->dist);
    d->index = malloc(slots * sizeof *d->index);
    float *keys = malloc(slots * sizeof *keys);
    if (!d->ref || !d->queries || !d->dist || !d->index || !keys) {
        free(keys);
        return false;
    }
    for (size_t i = 0; i < (size_t)w->n * (size_t)w->dim; i++)
        d->ref[i] = (float)((int)(next(&s) % 8) - 3);
    for (size_t i = 0; i < (size_t)w->nq * (size_t)w->dim; i++)
        d->queries[i] = (float)(next(&s) % 64) / 8.0f - 3.5f;
    const bool ok = oracle_knn(d->ref, w->n, d->queries, w->nq, w->dim, w->oracle_metric, w->k,
                               keys, d->index) == 0;
    for (size_t i = 0; i < slots; i++)
        d->dist[i] =
            d->index[i] == UINT32_MAX ? INFINITY : oracle_distance(keys[i], w->oracle_metric);
    free(keys);
    return ok;
}

static void free_data(data *d)
{
    free(d->ref);
    free(d->queries);
    free(d->dist);
    free(d->index);
}

static void check_search(worker *w, lbknn_index *ix, const data *d)
{
    const size_t slots = (size_t)w->nq * (size_t)w->k;
    int64_t *ids = malloc(slots * sizeof *ids);
    float *dist = malloc(slots * sizeof *dist);
    const lbknn_status rc = ids && dist
                                ? lbknn_index_search(ix, w->nq, d->queries, w->k, ids, dist)
                                : LBKNN_ERR_NOMEM;
    CHECK(w, rc == LBKNN_OK, "search: %s", lbknn_index_error(ix));
    int wrong = 0;
    for (size_t s = 0; rc == LBKNN_OK && s < slots; s++) {
        const int64_t want = d->index[s] == UINT32_MAX ? -1 : (int64_t)d->index[s];
        if (ids[s] != want || memcmp(&dist[s], &d->dist[s], sizeof *dist) != 0)
            wrong++;
    }
    CHECK(w, wrong == 0, "search: %d of %zu slots differ from the oracle's", wrong, slots);
    free(ids);
    free(dist);
}

/* One round: an options error, a build error, a build, a search and a
 * search error, each step begun by both threads together. */
static void round_of(worker *w, lbknn_context *ctx, const data *d)
{
    char k[16], expected[160];
    snprintf(k, sizeof k, "%d", w->k);
    lbknn_options *o = NULL;
    if (lbknn_options_create(&o) != LBKNN_OK) {
        CHECK(w, false, "options: out of memory");
        for (int i = 0; i < ROUND_STEPS; i++)
            pthread_barrier_wait(&step);
        return;
    }
    pthread_barrier_wait(&step);
    snprintf(expected, sizeof expected, "option %s=%s: ", w->key, w->value);
    for (int i = 0; i < repeats; i++) {
        CHECK(w, lbknn_options_set(o, w->key, w->value) == LBKNN_ERR_CONFIG, "%s=%s accepted",
              w->key, w->value);
        CHECK(w, strncmp(lbknn_options_error(o), expected, strlen(expected)) == 0,
              "options: message \"%s\", expected \"%s...\"", lbknn_options_error(o), expected);
    }
    const bool set = lbknn_options_set(o, "knn.k", k) == LBKNN_OK &&
                     lbknn_options_set(o, "knn.metric", w->metric) == LBKNN_OK &&
                     lbknn_options_set(o, "knn.engine", w->engine) == LBKNN_OK &&
                     lbknn_options_set(o, "device.batch", "16") == LBKNN_OK;
    CHECK(w, set, "options: %s", lbknn_options_error(o));

    /* Each rank of the first context passes its even share of the rows. */
    const int parts = w->over_world ? ranks : 1, part = w->over_world ? rank : 0;
    const uint32_t first = (uint32_t)((uint64_t)w->n * (uint64_t)part / (uint64_t)parts);
    const uint32_t rows =
        (uint32_t)((uint64_t)w->n * (uint64_t)(part + 1) / (uint64_t)parts) - first;
    const float *mine = d->ref + (size_t)first * (size_t)w->dim;
    float *bad = malloc((size_t)rows * (size_t)w->dim * sizeof *bad);
    lbknn_index *ix = NULL;
    pthread_barrier_wait(&step);
    if (bad) {
        memcpy(bad, mine, (size_t)rows * (size_t)w->dim * sizeof *bad);
        bad[(size_t)w->nan_row * (size_t)w->dim] = NAN;
        snprintf(expected, sizeof expected, "points[%d][0] = nan", w->nan_row);
        for (int i = 0; i < repeats; i++) {
            CHECK(w,
                  lbknn_index_build(ctx, o, rows, w->dim, bad, NULL, NULL, &ix) ==
                      LBKNN_ERR_INPUT,
                  "a NaN built an index");
            check_message(w, "build", lbknn_context_error(ctx), expected);
        }
        free(bad);
    }

    pthread_barrier_wait(&step);
    const int rc = lbknn_index_build(ctx, o, rows, w->dim, mine, NULL, NULL, &ix);
    CHECK(w, rc == LBKNN_OK, "build: %s", lbknn_context_error(ctx));
    pthread_barrier_wait(&step);
    if (rc == LBKNN_OK)
        check_search(w, ix, d);

    pthread_barrier_wait(&step);
    snprintf(expected, sizeof expected, "k = %d: must be 1 .. %d", w->k + 1, w->k);
    for (int i = 0; i < repeats && rc == LBKNN_OK; i++) {
        CHECK(w,
              lbknn_index_search(ix, w->nq, d->queries, w->k + 1, NULL, NULL) == LBKNN_ERR_USAGE,
              "k = %d searched", w->k + 1);
        check_message(w, "search", lbknn_index_error(ix), expected);
    }
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
}

static void *run(void *arg)
{
    worker *w = arg;
    data d = {0};
    lbknn_context *ctx = NULL;
    char error[512] = "";
    /* Every thread passes every barrier, whatever failed. */
    const bool made = make_data(w, &d);
    CHECK(w, made, "out of memory for the data");
    MPI_Comm world = MPI_COMM_WORLD;
    pthread_barrier_wait(&step);
    if (lbknn_context_create(NULL, w->over_world ? (const void *)&world : NULL, &ctx, error,
                             sizeof error) != LBKNN_OK)
        CHECK(w, false, "context: %s", error);
    if (ctx) {
        CHECK(w,
              lbknn_context_set_log_callback(ctx, on_context_log, w, (lbknn_log_level)7) ==
                      LBKNN_ERR_USAGE &&
                  strstr(lbknn_context_error(ctx), "level = 7"),
              "log level 7: accepted, or message \"%s\"", lbknn_context_error(ctx));
        CHECK(w, lbknn_context_set_log_callback(ctx, on_context_log, w, w->level) == LBKNN_OK,
              "log callback: %s", lbknn_context_error(ctx));
    }
    for (int r = 0; r < rounds; r++) {
        if (ctx && made)
            round_of(w, ctx, &d);
        else
            for (int i = 0; i < ROUND_STEPS; i++)
                pthread_barrier_wait(&step);
    }
    lbknn_context_destroy(ctx);
    free_data(&d);
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mpi") == 0)
            mpi = true;
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (strcmp(argv[i], "--shrink") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            shrink = (uint32_t)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--mpi] [--rounds N] [--repeats N] [--shrink S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (mpi) {
        /* Only the first thread calls MPI; MULTIPLE is what lbknn.h asks of
         * two threads that may both. */
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            printf("skipped: MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
            MPI_Finalize();
            return 77;
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    }
    lbknn_set_log_callback(on_process_log, NULL);
    worker w[2] = {
        {.metric = "l2",
         .oracle_metric = 0,
         .engine = "kdtree",
         .n = 700,
         .nq = 60,
         .dim = 3,
         .k = 5,
         .seed = 11,
         .level = LBKNN_LOG_INFO,
         .nan_row = 17,
         .key = "knn.k",
         .value = "0",
         .over_world = mpi},
        {.metric = "l1",
         .oracle_metric = 1,
         .engine = "brute",
         .n = 500,
         .nq = 40,
         .dim = 6,
         .k = 4,
         .seed = 23,
         .level = LBKNN_LOG_ERROR,
         .nan_row = 23,
         .key = "knn.metric",
         .value = "l9"},
    };
    for (int i = 0; i < 2; i++) {
        w[i].n /= shrink;
        w[i].nq /= shrink;
    }
    pthread_barrier_init(&step, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i].thread, NULL, run, &w[i]);
    int failures = 0;
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].thread, NULL);
        /* Per round and repeat: a build error and a search error. */
        CHECK(&w[i], w[i].errors == 2 * rounds * repeats,
              "the callback got %d errors, expected %d", w[i].errors, 2 * rounds * repeats);
        CHECK(&w[i], w[i].foreign == 0, "the callback was called %d times from the other thread",
              w[i].foreign);
        CHECK(&w[i], w[i].too_verbose == 0, "the callback got %d messages above level %d",
              w[i].too_verbose, (int)w[i].level);
        failures += w[i].failures;
    }
    /* The options' errors (one per thread, round and repeat) and the failed level
     * (context's callback not yet set) reach the process's callback. */
    if (process_errors != 2 * rounds * repeats + 2) {
        fprintf(stderr, "FAIL rank %d: the process's callback got %d errors, expected %d\n", rank,
                process_errors, 2 * rounds * repeats + 2);
        failures++;
    }
    pthread_barrier_destroy(&step);
    printf("rank %d: %s: two contexts in two threads, %d rounds\n", rank,
           failures ? "FAILED" : "ok", rounds);
    if (mpi)
        MPI_Finalize();
    return failures ? 1 : 0;
}
