/* PBKNN paper setting: 64-d uniform data, 10240*m references, 32 queries,
 * K = 16. Times the bubble selection against the CUKNN-style full-sort
 * baseline (kernel time from event profiling) and the end-to-end engine
 * call, and checks both give identical results. With --write DIR it also
 * writes DIR/base_m<m>.fvecs and DIR/query.fvecs for bench/pbknn_peers.py.
 *
 *   pbknn_select [--m 1,8,64] [--k 16] [--queries 32] [--dim 64] [--reps 5]
 *                [--groups 32] [--groups-sweep 1,4,...] [--write DIR] */
#include "bench_args.h"
#include "brute.h"
#include "cuknn_baseline.h"
#include "device.h"
#include "log.h"
#include "timer.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int m[16];
    int m_count;
    int k, queries, dim, reps, groups;
    int sweep[32];
    int sweep_count;
    const char *write_dir;
} options;

/* Deterministic uniform [0, 1) data; pbknn_peers.py reads the fvecs copy. */
static void generate(float *x, size_t count, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(s >> 40) / 16777216.0f;
    }
}

static lbk_status write_fvecs(const char *path, const float *x, size_t rows, int dim)
{
    lbk_status st = LBK_OK;
    FILE *f = fopen(path, "wb");
    if (!f) {
        lbk_error("cannot write %s", path);
        return LBK_ERR_IO;
    }
    for (size_t i = 0; i < rows; i++) {
        const int32_t d = dim;
        if (fwrite(&d, 4, 1, f) != 1 || fwrite(x + i * dim, 4, (size_t)dim, f) != (size_t)dim) {
            lbk_error("writing %s failed", path);
            st = LBK_ERR_IO;
            break;
        }
    }
    if (fclose(f) != 0 && st == LBK_OK) {
        lbk_error("closing %s failed", path);
        st = LBK_ERR_IO;
    }
    return st;
}

typedef struct {
    double select_s, final_s, distance_s, wall_s;
} measurement;

/* Median-free: the minimum over repetitions is the least disturbed by the
 * other users of a shared machine. */
static lbk_status measure(lbk_device *dev, const lbk_dataset *ref, const float *queries,
                          const options *o, bool full_sort, int groups,
                          lbk_brute_prefilter prefilter, lbk_knn_result *res, measurement *best)
{
    lbk_status st = LBK_OK;
    lbk_brute *engine = NULL;
    const lbk_brute_params params = {
        .k = o->k, .metric = LBK_METRIC_L2, .groups = groups, .prefilter = prefilter};
    if ((st = full_sort ? lbk_cuknn_create(dev, ref, &params, &engine)
                        : lbk_brute_create(dev, ref, &params, &engine)) != LBK_OK)
        goto cleanup;
    best->select_s = best->final_s = best->distance_s = best->wall_s = 1e30;
    for (int r = -1; r < o->reps; r++) { /* r = -1: warm-up */
        const double t0 = lbk_timer_now();
        if ((st = lbk_brute_query(engine, queries, (uint64_t)o->queries, res)) != LBK_OK)
            goto cleanup;
        const double wall = lbk_timer_now() - t0;
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        if (r < 0)
            continue;
        if (t.select_s < best->select_s)
            best->select_s = t.select_s;
        if (t.final_s < best->final_s)
            best->final_s = t.final_s;
        if (t.distance_s < best->distance_s)
            best->distance_s = t.distance_s;
        if (wall < best->wall_s)
            best->wall_s = wall;
    }
cleanup:
    lbk_brute_destroy(engine);
    return st;
}

int main(int argc, char **argv)
{
    options o = {
        .m = {1, 8, 64}, .m_count = 3, .k = 16, .queries = 32, .dim = 64, .reps = 5, .groups = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "pbknn_select: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--m") == 0)
            o.m_count = lbk_bench_parse_ints(v, o.m, 16);
        else if (strcmp(a, "--k") == 0)
            o.k = atoi(v);
        else if (strcmp(a, "--queries") == 0)
            o.queries = atoi(v);
        else if (strcmp(a, "--dim") == 0)
            o.dim = atoi(v);
        else if (strcmp(a, "--reps") == 0)
            o.reps = atoi(v);
        else if (strcmp(a, "--groups") == 0)
            o.groups = atoi(v);
        else if (strcmp(a, "--groups-sweep") == 0)
            o.sweep_count = lbk_bench_parse_ints(v, o.sweep, 32);
        else if (strcmp(a, "--write") == 0)
            o.write_dir = v;
        else {
            fprintf(stderr, "pbknn_select: unknown option %s\n", a);
            return 2;
        }
        i++;
    }

    lbk_status st = LBK_OK;
    lbk_device *dev = NULL;
    float *queries = malloc((size_t)o.queries * o.dim * sizeof *queries);
    lbk_knn_result a = {.queries = (uint64_t)o.queries, .k = o.k};
    lbk_knn_result b = a;
    a.keys = malloc((size_t)o.queries * o.k * 4);
    a.index = malloc((size_t)o.queries * o.k * 4);
    b.keys = malloc((size_t)o.queries * o.k * 4);
    b.index = malloc((size_t)o.queries * o.k * 4);
    float *ref = NULL;
    if (!queries || !a.keys || !a.index || !b.keys || !b.index) {
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    generate(queries, (size_t)o.queries * o.dim, 1);
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    if ((st = lbk_device_open(&req, &dev)) != LBK_OK)
        goto cleanup;
    printf("# device: %s\n# dim %d, %d queries, K = %d, %d reps (minimum reported), groups %s\n"
           "# ratio = full-sort (select + final) / bubble (select + final), both on the exact\n"
           "# distance matrix; prefilt_e2e = engine call with the L2 prefilter (default)\n",
           lbk_device_description(dev), o.dim, o.queries, o.k, o.reps,
           o.groups ? "as given by --groups" : "default (auto)");
    if (o.write_dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/query.fvecs", o.write_dir);
        if ((st = write_fvecs(path, queries, (size_t)o.queries, o.dim)) != LBK_OK)
            goto cleanup;
    }
    printf("%8s %10s %12s %12s %12s %12s %8s %12s %12s %12s %12s\n", "m", "refs", "bubble_sel_ms",
           "bubble_fin_ms", "sort_sel_ms", "sort_fin_ms", "ratio", "distance_ms", "bubble_e2e_ms",
           "sort_e2e_ms", "prefilt_e2e");
    for (int mi = 0; mi < o.m_count; mi++) {
        const size_t n = (size_t)10240 * o.m[mi];
        free(ref);
        ref = malloc(n * o.dim * sizeof *ref);
        if (!ref) {
            st = LBK_ERR_NOMEM;
            goto cleanup;
        }
        generate(ref, n * o.dim, 1000 + (uint64_t)o.m[mi]);
        if (o.write_dir) {
            char path[1024];
            snprintf(path, sizeof path, "%s/base_m%d.fvecs", o.write_dir, o.m[mi]);
            if ((st = write_fvecs(path, ref, n, o.dim)) != LBK_OK)
                goto cleanup;
        }
        const lbk_dataset data = {.rows = n, .dim = o.dim, .points = ref};
        /* The paper's comparison is of the selection alone: both without the
         * prefilter, on the same exact distance matrix. */
        measurement bub, srt, pre;
        if ((st = measure(dev, &data, queries, &o, false, o.groups, LBK_PREFILTER_OFF, &a,
                          &bub)) != LBK_OK)
            goto cleanup;
        if ((st = measure(dev, &data, queries, &o, true, o.groups, LBK_PREFILTER_OFF, &b,
                          &srt)) != LBK_OK)
            goto cleanup;
        const size_t slots = (size_t)o.queries * o.k;
        if (memcmp(a.keys, b.keys, slots * 4) != 0 || memcmp(a.index, b.index, slots * 4) != 0) {
            lbk_error("bubble and full-sort results differ at m = %d", o.m[mi]);
            st = LBK_ERR_INTERNAL;
            goto cleanup;
        }
        if ((st = measure(dev, &data, queries, &o, false, o.groups, LBK_PREFILTER_AUTO, &b,
                          &pre)) != LBK_OK)
            goto cleanup;
        if (memcmp(a.keys, b.keys, slots * 4) != 0 || memcmp(a.index, b.index, slots * 4) != 0) {
            lbk_error("prefiltered and direct results differ at m = %d", o.m[mi]);
            st = LBK_ERR_INTERNAL;
            goto cleanup;
        }
        const double bsel = bub.select_s + bub.final_s, ssel = srt.select_s + srt.final_s;
        printf("%8d %10zu %12.3f %12.3f %12.3f %12.3f %8.1f %12.3f %12.3f %12.3f %12.3f\n",
               o.m[mi], n, bub.select_s * 1e3, bub.final_s * 1e3, srt.select_s * 1e3,
               srt.final_s * 1e3, ssel / bsel, bub.distance_s * 1e3, bub.wall_s * 1e3,
               srt.wall_s * 1e3, pre.wall_s * 1e3);
        for (int g = 0; g < o.sweep_count; g++) {
            measurement sw;
            if ((st = measure(dev, &data, queries, &o, false, o.sweep[g], LBK_PREFILTER_OFF, &a,
                              &sw)) != LBK_OK)
                goto cleanup;
            printf("#   m %d groups %4d: select %.3f ms + final %.3f ms = %.3f ms\n", o.m[mi],
                   o.sweep[g], sw.select_s * 1e3, sw.final_s * 1e3,
                   (sw.select_s + sw.final_s) * 1e3);
        }
        fflush(stdout);
    }
cleanup:
    lbk_device_close(dev);
    free(ref);
    free(queries);
    free(a.keys);
    free(a.index);
    free(b.keys);
    free(b.index);
    return lbk_status_exit_code(st);
}
