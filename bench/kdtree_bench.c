/* Benchmarks of the tag-sort k-d tree and the tree kNN engine; results and
 * commands in bench/results/kdtree.md.
 *
 *   kdtree_bench build     N DIST SORT SPLIT [REPS]   one build row
 *   kdtree_bench scaling   SORT [MAX_N]               build time vs N (x4 steps), log-log
 *   kdtree_bench query     N NQ K [REPS]              3-D build + query
 *   kdtree_bench crossover N NQ K DIM...              tree vs brute force
 *   kdtree_bench radius    N NQ R [REPS]              3-D radius count + fill (engine.h),
 *                                                     and K = mean count kNN beside it
 *
 * DIST: uniform | clustered; SORT: auto | radix | bitonic; SPLIT: rr | widest.
 * Data: uniform in [0,1)^d, or 64 Gaussian blobs (sigma 0.01) in [0,1)^d; the
 * Python peers (bench/kdtree_peers.py) draw from the same distributions.
 * Build times include the upload; "bytes/pt/level" is the builder's own
 * access-pattern count (lbk_kdtree_stats.bytes_moved), the minimum a read and
 * a write of each point and its row id. */
#include "brute.h"
#include "device.h"
#include "engine.h"
#include "kdtree.h"
#include "log.h"
#include "radius.h"
#include "timer.h"
#include "tree_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state = 12345;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_unit(void) { return (float)(rng_next() >> 40) / (float)(1 << 24); }

static float *make_data(uint64_t n, int dim, bool clustered)
{
    float *p = malloc((size_t)(n * (uint64_t)dim + 1) * sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    /* The same blob centres for references and queries. */
    const uint64_t saved = rng_state;
    rng_state = 777;
    float centres[64][64];
    for (int c = 0; c < 64; c++)
        for (int j = 0; j < 64; j++)
            centres[c][j] = rng_unit();
    rng_state = saved;
    for (uint64_t i = 0; i < n; i++) {
        const int c = (int)(rng_next() % 64);
        for (int j = 0; j < dim; j++) {
            float v;
            if (clustered) {
                float u = rng_unit(), w = rng_unit();
                if (u < 1e-7f)
                    u = 1e-7f;
                v = centres[c][j % 64] + 0.01f * sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * w);
            } else {
                v = rng_unit();
            }
            p[i * (uint64_t)dim + (uint64_t)j] = v;
        }
    }
    return p;
}

static lbk_tree_sort parse_sort(const char *s)
{
    return strcmp(s, "radix") == 0     ? LBK_SORT_RADIX
           : strcmp(s, "bitonic") == 0 ? LBK_SORT_BITONIC
           : strcmp(s, "select") == 0  ? LBK_SORT_SELECT
                                       : LBK_SORT_AUTO;
}

/* The builder's diagnostics, read from this program's environment
 * (bench/results/kdtree.md): LBK_KDTREE_PROFILE (set: time every kernel and
 * level) and LBK_KDTREE_SEGMENT_MAX=n (the longest run sorted one per
 * work-item; 0 = the global radix for every level but the last). */
static lbk_kdtree_params tree_params(lbk_tree_split split, lbk_tree_sort sort)
{
    lbk_kdtree_params p = {.split = split, .sort = sort};
    p.profile = getenv("LBK_KDTREE_PROFILE") != NULL;
    const char *segment_max = getenv("LBK_KDTREE_SEGMENT_MAX");
    if (segment_max) {
        p.segment_max_set = true;
        p.segment_max = strtoull(segment_max, NULL, 10);
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median build time of `reps` builds; stats of the last. */
static int build_once(lbk_device *dev, uint64_t n, int dim, bool clustered, lbk_tree_sort sort,
                      lbk_tree_split split, int reps, double *median, lbk_kdtree_stats *stats)
{
    float *pts = make_data(n, dim, clustered);
    const lbk_dataset ds = {.rows = n, .dim = dim, .points = pts};
    const lbk_kdtree_params params = tree_params(split, sort);
    double t[32];
    if (reps > 32)
        reps = 32;
    for (int r = 0; r < reps; r++) {
        lbk_kdtree *tree = NULL;
        if (lbk_kdtree_build(dev, &ds, &params, &tree) != LBK_OK) {
            free(pts);
            return 1;
        }
        lbk_kdtree_get_stats(tree, stats);
        t[r] = stats->build_s;
        lbk_kdtree_destroy(tree);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *median = t[reps / 2];
    free(pts);
    return 0;
}

static void print_build_header(void)
{
    printf("| N | dim | data | split | sort | build s | peak device MiB | bytes/pt/level "
           "(model) | minimum |\n|---|---|---|---|---|---|---|---|---|\n");
}

static void print_build_row(uint64_t n, int dim, const char *dist, lbk_tree_split split, double t,
                            const lbk_kdtree_stats *st)
{
    const int levels = st->levels > 0 ? st->levels : 1;
    /* Minimum per level: read and write each point once with its row id. */
    const double minimum = 2.0 * (4.0 * dim + 4.0);
    printf("| %llu | %d | %s | %s | %s | %.3f | %.1f | %.0f | %.0f |\n", (unsigned long long)n,
           dim, dist, split == LBK_SPLIT_WIDEST ? "widest" : "round-robin",
           lbk_tree_sort_name(st->sort_used), t, (double)st->peak_device_bytes / 1048576.0,
           (double)st->bytes_moved / (double)n / levels, minimum);
}

static int cmd_build(lbk_device *dev, int argc, char **argv)
{
    if (argc < 4)
        return 2;
    const uint64_t n = (uint64_t)atof(argv[0]);
    const bool clustered = strcmp(argv[1], "clustered") == 0;
    const lbk_tree_sort sort = parse_sort(argv[2]);
    const lbk_tree_split split =
        strcmp(argv[3], "widest") == 0 ? LBK_SPLIT_WIDEST : LBK_SPLIT_ROUND_ROBIN;
    const int reps = argc > 4 ? atoi(argv[4]) : 3;
    double t;
    lbk_kdtree_stats st;
    if (build_once(dev, n, 3, clustered, sort, split, reps, &t, &st))
        return 1;
    print_build_header();
    print_build_row(n, 3, argv[1], split, t, &st);
    return 0;
}

static int cmd_scaling(lbk_device *dev, int argc, char **argv)
{
    const lbk_tree_sort sort = argc > 0 ? parse_sort(argv[0]) : LBK_SORT_RADIX;
    const uint64_t max_n = argc > 1 ? (uint64_t)atof(argv[1]) : 4000000;
    print_build_header();
    double prev_t = 0, prev_n = 0;
    char slopes[2048] = "";
    for (uint64_t n = 1 << 14; n <= max_n; n *= 4) {
        double t;
        lbk_kdtree_stats st;
        if (build_once(dev, n, 3, false, sort, LBK_SPLIT_ROUND_ROBIN, 3, &t, &st))
            return 1;
        print_build_row(n, 3, "uniform", LBK_SPLIT_ROUND_ROBIN, t, &st);
        if (prev_n > 0) {
            char row[128];
            snprintf(row, sizeof row, "| %.0f -> %llu | %.2f |\n", prev_n, (unsigned long long)n,
                     log(t / prev_t) / log((double)n / prev_n));
            strncat(slopes, row, sizeof slopes - strlen(slopes) - 1);
        }
        prev_t = t;
        prev_n = (double)n;
    }
    printf("\n| N step | log-log slope of build time |\n|---|---|\n%s", slopes);
    return 0;
}

static int cmd_query(lbk_device *dev, int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const uint64_t n = (uint64_t)atof(argv[0]), nq = (uint64_t)atof(argv[1]);
    const int k = atoi(argv[2]);
    const int reps = argc > 3 ? atoi(argv[3]) : 3;
    printf("| N | queries | K | data | build s | query s | queries/s "
           "|\n|---|---|---|---|---|---|---|\n");
    for (int c = 0; c < 2; c++) {
        float *pts = make_data(n, 3, c);
        float *qs = make_data(nq, 3, c);
        const lbk_dataset ds = {.rows = n, .dim = 3, .points = pts};
        const lbk_kdtree_params params = tree_params(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_AUTO);
        lbk_kdtree *tree = NULL;
        lbk_knn_result r = {.queries = nq, .k = k};
        r.keys = malloc((size_t)(nq * (uint64_t)k) * sizeof *r.keys);
        r.index = malloc((size_t)(nq * (uint64_t)k) * sizeof *r.index);
        if (!r.keys || !r.index || lbk_kdtree_build(dev, &ds, &params, &tree) != LBK_OK)
            return 1;
        double t[32];
        for (int i = 0; i < reps && i < 32; i++) {
            const double t0 = lbk_timer_now();
            if (lbk_tree_query(tree, qs, nq, k, LBK_METRIC_L2, &r, NULL) != LBK_OK)
                return 1;
            t[i] = lbk_timer_now() - t0;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        lbk_kdtree_stats st;
        lbk_kdtree_get_stats(tree, &st);
        printf("| %llu | %llu | %d | %s | %.3f | %.3f | %.0f |\n", (unsigned long long)n,
               (unsigned long long)nq, k, c ? "clustered" : "uniform", st.build_s, t[reps / 2],
               (double)nq / t[reps / 2]);
        lbk_kdtree_destroy(tree);
        free(r.keys);
        free(r.index);
        free(pts);
        free(qs);
    }
    return 0;
}

/* Tree (build + query) against brute force (upload + query), uniform data. */
static int cmd_crossover(lbk_device *dev, int argc, char **argv)
{
    if (argc < 4)
        return 2;
    const uint64_t n = (uint64_t)atof(argv[0]), nq = (uint64_t)atof(argv[1]);
    const int k = atoi(argv[2]);
    printf("| dim | N | queries | K | tree build s | tree query s | brute s | tree total / "
           "brute |\n|---|---|---|---|---|---|---|---|\n");
    for (int a = 3; a < argc; a++) {
        const int dim = atoi(argv[a]);
        float *pts = make_data(n, dim, false);
        float *qs = make_data(nq, dim, false);
        const lbk_dataset ds = {.rows = n, .dim = dim, .points = pts};
        lbk_knn_result r = {.queries = nq, .k = k};
        r.keys = malloc((size_t)(nq * (uint64_t)k) * sizeof *r.keys);
        r.index = malloc((size_t)(nq * (uint64_t)k) * sizeof *r.index);
        const lbk_kdtree_params params = tree_params(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_AUTO);
        lbk_kdtree *tree = NULL;
        if (!r.keys || !r.index || lbk_kdtree_build(dev, &ds, &params, &tree) != LBK_OK)
            return 1;
        lbk_kdtree_stats st;
        lbk_kdtree_get_stats(tree, &st);
        double t0 = lbk_timer_now();
        if (lbk_tree_query(tree, qs, nq, k, LBK_METRIC_L2, &r, NULL) != LBK_OK)
            return 1;
        const double tq = lbk_timer_now() - t0;
        lbk_kdtree_destroy(tree);

        const lbk_brute_params bp = {
            .k = k, .metric = LBK_METRIC_L2, .groups = 0, .memory_budget = 0};
        lbk_brute *brute = NULL;
        t0 = lbk_timer_now();
        double tb = NAN;
        if (lbk_brute_create(dev, &ds, &bp, &brute) == LBK_OK) {
            const uint64_t batch = lbk_brute_max_batch(brute);
            bool ok = true;
            for (uint64_t f = 0; f < nq && ok; f += batch) {
                const uint64_t c = nq - f < batch ? nq - f : batch;
                lbk_knn_result part = {.queries = c,
                                       .k = k,
                                       .keys = r.keys + f * (uint64_t)k,
                                       .index = r.index + f * (uint64_t)k};
                ok = lbk_brute_query(brute, qs + f * (uint64_t)dim, c, &part) == LBK_OK;
            }
            if (ok)
                tb = lbk_timer_now() - t0;
            lbk_brute_destroy(brute);
        }
        printf("| %d | %llu | %llu | %d | %.3f | %.3f | %.3f | %.2f |\n", dim,
               (unsigned long long)n, (unsigned long long)nq, k, st.build_s, tq, tb,
               (st.build_s + tq) / tb);
        fflush(stdout);
        free(pts);
        free(qs);
        free(r.keys);
        free(r.index);
    }
    return 0;
}

/* Radius count and fill through the engine (the fill's host sort
 * included), uniform 3-D data, beside a kNN query whose K is the mean
 * count. */
static int cmd_radius(lbk_device *dev, int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const uint64_t n = (uint64_t)atof(argv[0]), nq = (uint64_t)atof(argv[1]);
    const float r = (float)atof(argv[2]);
    const int reps = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 3;
    float *pts = make_data(n, 3, false), *qs = make_data(nq, 3, false);
    float *bounds = malloc((size_t)nq * sizeof *bounds);
    uint64_t *off = calloc((size_t)nq + 1, sizeof *off);
    if (!bounds || !off)
        return 1;
    for (uint64_t q = 0; q < nq; q++)
        bounds[q] = lbk_radius_key_bound(LBK_METRIC_L2, r);
    const lbk_dataset ds = {.rows = n, .dim = 3, .points = pts};
    const lbk_engine_params params = {
        .engine = LBK_ENGINE_KDTREE, .k = 1, .metric = LBK_METRIC_L2};
    lbk_engine_state *engine = NULL;
    if (lbk_engine_create(dev, &params, LBK_ENGINE_KDTREE, &ds, &engine) != LBK_OK)
        return 1;
    double tc[32], tf[32];
    float *keys = NULL;
    uint32_t *rows = NULL;
    for (int i = 0; i < reps && i < 32; i++) {
        double t0 = lbk_timer_now();
        if (lbk_engine_radius_count(engine, qs, bounds, nq, off + 1) != LBK_OK)
            return 1;
        tc[i] = lbk_timer_now() - t0;
        for (uint64_t q = 0; q < nq; q++)
            off[q + 1] += off[q];
        free(keys);
        free(rows);
        keys = malloc((size_t)off[nq] * sizeof *keys + 1);
        rows = malloc((size_t)off[nq] * sizeof *rows + 1);
        if (!keys || !rows)
            return 1;
        t0 = lbk_timer_now();
        if (lbk_engine_radius_fill(engine, qs, bounds, nq, off, keys, rows) != LBK_OK)
            return 1;
        tf[i] = lbk_timer_now() - t0;
    }
    const uint64_t total = off[nq];
    qsort(tc, (size_t)reps, sizeof tc[0], cmp_double);
    qsort(tf, (size_t)reps, sizeof tf[0], cmp_double);
    lbk_engine_work work;
    lbk_engine_work_of(engine, &work);
    lbk_engine_destroy(engine);
    /* kNN with K = the mean count, for scale. */
    const lbk_kdtree_params tp = tree_params(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_AUTO);
    lbk_kdtree *tree = NULL;
    int k = (int)((total + nq / 2) / (nq ? nq : 1));
    k = k < 1 ? 1 : k;
    lbk_knn_result res = {.queries = nq, .k = k};
    res.keys = malloc((size_t)(nq * (uint64_t)k) * sizeof *res.keys);
    res.index = malloc((size_t)(nq * (uint64_t)k) * sizeof *res.index);
    if (!res.keys || !res.index || lbk_kdtree_build(dev, &ds, &tp, &tree) != LBK_OK)
        return 1;
    double tk[32];
    for (int i = 0; i < reps && i < 32; i++) {
        const double t0 = lbk_timer_now();
        if (lbk_tree_query(tree, qs, nq, k, LBK_METRIC_L2, &res, NULL) != LBK_OK)
            return 1;
        tk[i] = lbk_timer_now() - t0;
    }
    qsort(tk, (size_t)reps, sizeof tk[0], cmp_double);
    printf("| N | queries | r | mean count | count s | fill s | count + fill s | kNN K | kNN s "
           "|\n|---|---|---|---|---|---|---|---|---|\n");
    printf("| %llu | %llu | %g | %.2f | %.3f | %.3f | %.3f | %d | %.3f |\n",
           (unsigned long long)n, (unsigned long long)nq, (double)r,
           (double)total / (double)(nq ? nq : 1), tc[reps / 2], tf[reps / 2],
           tc[reps / 2] + tf[reps / 2], k, tk[reps / 2]);
    printf("\nwork (all reps): distance_evals %llu, nodes_visited %llu\n",
           (unsigned long long)work.distance_evals, (unsigned long long)work.nodes_visited);
    lbk_kdtree_destroy(tree);
    free(res.keys);
    free(res.index);
    free(keys);
    free(rows);
    free(bounds);
    free(off);
    free(pts);
    free(qs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: kdtree_bench build|scaling|query|crossover|radius ARGS (see source)\n");
        return 2;
    }
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    lbk_device *dev = NULL;
    if (lbk_device_open(&req, &dev) != LBK_OK)
        return 1;
    printf("device: %s\n\n", lbk_device_description(dev));
    int rc = 2;
    if (strcmp(argv[1], "build") == 0)
        rc = cmd_build(dev, argc - 2, argv + 2);
    else if (strcmp(argv[1], "scaling") == 0)
        rc = cmd_scaling(dev, argc - 2, argv + 2);
    else if (strcmp(argv[1], "query") == 0)
        rc = cmd_query(dev, argc - 2, argv + 2);
    else if (strcmp(argv[1], "crossover") == 0)
        rc = cmd_crossover(dev, argc - 2, argv + 2);
    else if (strcmp(argv[1], "radius") == 0)
        rc = cmd_radius(dev, argc - 2, argv + 2);
    if (rc == 2)
        fprintf(stderr, "bad arguments; see the comment at the top of bench/kdtree_bench.c\n");
    lbk_device_close(dev);
    return rc;
}
