/* Selection cost against K: the parallel bubble and the sort-merge of
 * kernels/brute_sort.cl on the same exact distance matrix (64-d uniform
 * data, L2, prefilter off), select + final kernel time from event
 * profiling, the minimum over repetitions after a warm-up; both must return
 * identical bytes. It sets the engine's switch point BRUTE_SORT_K_MIN and
 * shows how each grows with K (the bubble's K-long pipeline is quadratic in
 * K, the sort-merge's merges K log^2 K).
 *
 *   select_k [--k 16,64,256,1024,4096] [--refs 81920] [--queries 64]
 *            [--dim 64] [--reps 3] [--bubble-max-k 4096] */
#include "bench_args.h"
#include "brute.h"
#include "device.h"
#include "log.h"
#include "timer.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int k[32];
    int k_count;
    int refs, queries, dim, reps, bubble_max_k;
} options;

static void generate(float *x, size_t count, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(s >> 40) / 16777216.0f;
    }
}

typedef struct {
    double select_s, wall_s;
} measurement;

static lbk_status measure(lbk_device *dev, const lbk_dataset *ref, const float *queries,
                          const options *o, int k, lbk_brute_selection selection,
                          lbk_knn_result *res, measurement *best)
{
    lbk_status st = LBK_OK;
    lbk_brute *engine = NULL;
    const lbk_brute_params params = {
        .k = k, .metric = LBK_METRIC_L2, .prefilter = LBK_PREFILTER_OFF, .selection = selection};
    best->select_s = best->wall_s = 1e30;
    if ((st = lbk_brute_create(dev, ref, &params, &engine)) != LBK_OK)
        goto cleanup;
    for (int r = -1; r < o->reps; r++) { /* r = -1: warm-up (kernel compiles) */
        const double t0 = lbk_timer_now();
        if ((st = lbk_brute_query(engine, queries, (uint64_t)o->queries, res)) != LBK_OK)
            goto cleanup;
        const double wall = lbk_timer_now() - t0;
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        if (r < 0)
            continue;
        if (t.select_s + t.final_s < best->select_s)
            best->select_s = t.select_s + t.final_s;
        if (wall < best->wall_s)
            best->wall_s = wall;
    }
cleanup:
    lbk_brute_destroy(engine);
    return st;
}

static bool parse_options(int argc, char **argv, options *o)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--k") == 0)
            o->k_count = lbk_bench_parse_ints(v, o->k, 32);
        else if (strcmp(a, "--refs") == 0)
            o->refs = atoi(v);
        else if (strcmp(a, "--queries") == 0)
            o->queries = atoi(v);
        else if (strcmp(a, "--dim") == 0)
            o->dim = atoi(v);
        else if (strcmp(a, "--reps") == 0)
            o->reps = atoi(v);
        else if (strcmp(a, "--bubble-max-k") == 0)
            o->bubble_max_k = atoi(v);
        else
            return false;
    }
    return argc % 2 == 1;
}

/* One K: both selections, their times, and whether they agree. */
static lbk_status run_k(lbk_device *dev, const lbk_dataset *ref, const float *queries,
                        const options *o, int k)
{
    lbk_status st = LBK_OK;
    const size_t slots = (size_t)o->queries * (size_t)k;
    lbk_knn_result a = {.queries = (uint64_t)o->queries, .k = k}, b = a;
    a.keys = malloc(slots * 4);
    a.index = malloc(slots * 4);
    b.keys = malloc(slots * 4);
    b.index = malloc(slots * 4);
    measurement mb = {0, 0}, ms;
    const bool bubble = k <= o->bubble_max_k;
    if (!a.keys || !a.index || !b.keys || !b.index)
        st = LBK_ERR_NOMEM;
    if (st == LBK_OK)
        st = measure(dev, ref, queries, o, k, LBK_SELECTION_SORT_MERGE, &a, &ms);
    if (st == LBK_OK && bubble)
        st = measure(dev, ref, queries, o, k, LBK_SELECTION_BUBBLE, &b, &mb);
    if (st == LBK_OK) {
        const bool same = !bubble || (memcmp(a.keys, b.keys, slots * 4) == 0 &&
                                      memcmp(a.index, b.index, slots * 4) == 0);
        if (bubble)
            printf("%6d %14.2f %14.2f %8.2f %14.1f %14.1f %6s\n", k, mb.select_s * 1e3,
                   ms.select_s * 1e3, mb.select_s / ms.select_s, mb.wall_s * 1e3, ms.wall_s * 1e3,
                   same ? "yes" : "NO");
        else
            printf("%6d %14s %14.2f %8s %14s %14.1f %6s\n", k, "-", ms.select_s * 1e3, "-", "-",
                   ms.wall_s * 1e3, "-");
        fflush(stdout);
        if (!same)
            st = LBK_ERR_INTERNAL;
    }
    free(a.keys);
    free(a.index);
    free(b.keys);
    free(b.index);
    return st;
}

int main(int argc, char **argv)
{
    options o = {.k = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096},
                 .k_count = 9,
                 .refs = 81920,
                 .queries = 64,
                 .dim = 64,
                 .reps = 3,
                 .bubble_max_k = 4096};
    if (!parse_options(argc, argv, &o)) {
        fprintf(stderr, "usage: select_k [--k LIST] [--refs N] [--queries N] [--dim D] "
                        "[--reps R] [--bubble-max-k K]\n");
        return 2;
    }
    lbk_status st = LBK_OK;
    lbk_device *dev = NULL;
    float *ref = malloc((size_t)o.refs * o.dim * sizeof *ref);
    float *queries = malloc((size_t)o.queries * o.dim * sizeof *queries);
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    if (!ref || !queries || (st = lbk_device_open(&req, &dev)) != LBK_OK)
        goto cleanup;
    generate(ref, (size_t)o.refs * o.dim, 7);
    generate(queries, (size_t)o.queries * o.dim, 1);
    const lbk_dataset data = {.rows = (uint64_t)o.refs, .dim = o.dim, .points = ref};
    printf("# device: %s\n# %d refs x %d dims, %d queries, L2, prefilter off, groups auto, "
           "select+final kernel ms, minimum of %d reps\n",
           lbk_device_description(dev), o.refs, o.dim, o.queries, o.reps);
    printf("%6s %14s %14s %8s %14s %14s %6s\n", "K", "bubble_ms", "sortmerge_ms", "ratio",
           "bubble_e2e_ms", "sortm_e2e_ms", "same");
    for (int i = 0; i < o.k_count && st == LBK_OK; i++)
        st = run_k(dev, &data, queries, &o, o.k[i]);
cleanup:
    lbk_device_close(dev);
    free(ref);
    free(queries);
    return st == LBK_OK ? 0 : 1;
}
