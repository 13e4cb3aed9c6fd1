/* Randomized boundary cases of the brute-force engine against the host
 * oracle: keys and indices byte-identical, in (key, id) order. Every case
 * is drawn from (seed, case number) alone, next to the block sizes the
 * engine rounds to: the reference count next to multiples of the blocked
 * layout's lanes and register block (lanes x block_vectors, where whole
 * padding blocks lie past the last row), of the tiled kernel's 32-row tiles
 * and of forced reference chunks; the dimension next to the tuning's slice,
 * the tiles' 32 dimensions and the prefilter's and cascade's thresholds
 * (16, 64); K from 1 to 4096, below, at and above the reference count;
 * forced query batches (the memory budget) and caller slices; both distance
 * kernels, the prefilter off, on and with the cascade, both selections,
 * every metric. Each lbk_brute_query call gets arrays of exactly its size
 * from lbk_alloc_large: under LBKNN_GUARD_PAGES=1 a read or write past any
 * of them faults.
 *
 * Cases share their compile-time parameters (metric, K, kernel tuning,
 * work-group limit, selection) in groups of 32 (slow: 64) cases, so that a set
 * builds few OpenCL programs: the default set's groups come from a small
 * fixed pool, the slow set draws a new combination for every group.
 *
 *   boundary_brute default|slow [--seed S] [--cases N] [--case I]
 *
 * A failing or crashing case prints its shape and the one command that
 * replays it alone. */
#include "boundary.h"
#include "brute.h"
#include "device.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The oracle's metric numbers, which lbk_metric shares. */
enum { L2, L1, LINF, COS, IP };
static const char *const metric_names[] = {"l2", "l1", "linf", "cosine", "ip"};

/* The engine's block sizes and thresholds (src/engines/brute_*.c): the tiled
 * kernel's 32-row and 32-query tiles over 32-dimension steps, the
 * prefilter from 16 dimensions and up to K = 64, the cascade from 64
 * dimensions and below K = 64, the sort-merge from K = 64, the cascade's
 * 64-query probe batch. */
#define DIST_TR 32
#define DIST_TD 32
#define PREFILTER_MIN_DIM 16
#define PREFILTER_K_MAX 64
#define CASCADE_MIN_DIM 64
#define SORT_K_MIN 64
#define CASCADE_PROBE 64

/* Cases per group: the default set's, the slow set's. */
#define GROUP 32
#define SLOW_GROUP 64

typedef struct {
    int metric;
    int k;
    lbk_tuning tuning; /* lanes 0: derived from the device */
    int work_group_limit;
    lbk_brute_selection selection;
    bool tiled; /* cases may take the tiled distance kernel */
} config;

#define T(l, q, v, t, s)                                                                         \
    {                                                                                            \
        .lanes = l, .block_queries = q, .block_vectors = v, .tile_blocks = t, .slice = s,        \
        .segment_log2 = 16                                                                       \
    }
#define DERIVED                                                                                  \
    {                                                                                            \
        .lanes = 0                                                                               \
    }

/* The default set's pool, kept small because every combination builds its
 * own programs (PoCL, cold cache: seconds per program and about a second
 * for each kernel at each work-group shape, some 15-25 s per group here):
 * the lane counts 4, 8 and 16 with register blocks of 2 and 5 vectors
 * (whole padding blocks past n), slices of 16, 128 and 4096, K small, at
 * 100 on the bubble and at the maximum 4096 on the sort-merge; the
 * prefilter and the cascade where they apply (L2, cosine: K <= 64), the
 * tiled kernel in one group; L2, cosine, L1 and ip (Linf: the slow set,
 * tests/brute and boundary_kdtree). Besides the first, each matches the
 * programs of a tests/brute case (named), which a cold cache then builds
 * once for both. */
static const config default_pool[] = {
    {L2, 5, T(4, 3, 2, 2, 16), 0, LBK_SELECTION_AUTO, false},
    {COS, 16, T(16, 3, 5, 32, 4096), 0, LBK_SELECTION_AUTO, false}, /* tuned_l16_prefilter_cos */
    {L1, 100, DERIVED, 0, LBK_SELECTION_BUBBLE, true},              /* l1_k100, tiled_l1_k100 */
    {IP, 4096, DERIVED, 0, LBK_SELECTION_AUTO, false},              /* sortmerge_ip_k4096 */
};
#define DEFAULT_GROUPS (sizeof default_pool / sizeof default_pool[0])
#define SLOW_GROUPS 40

typedef struct {
    config cfg;
    lbk_tuning layout; /* the tuning in effect: cfg's, or the device's */
    lbk_brute_distance distance;
    lbk_brute_prefilter prefilter;
    uint32_t n, nq;
    int dim;
    lbk_bnd_data data;
    int groups;
    uint64_t budget;
    uint32_t slice; /* queries per lbk_brute_query call; 0 = all in one */
} shape;

/* ---- drawing a case ---- */

static int pick(lbk_test_rng *rng, const int *values, size_t n)
{
    return values[lbk_test_rng_below(rng, n)];
}
#define PICK(rng, ...)                                                                           \
    pick(rng, (const int[]){__VA_ARGS__}, sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

static config slow_config(uint64_t seed, uint32_t group)
{
    lbk_test_rng rng = lbk_bnd_rng(seed, "brute.slow.config", group);
    config c = {.metric = (int)lbk_test_rng_below(&rng, 5), .tiled = true};
    const uint64_t kind = lbk_test_rng_below(&rng, 4);
    if (kind == 0)
        c.k = (int)lbk_bnd_between(&rng, 1, 4096);
    else if (kind == 1) /* the bubble, the prefilter and the cascade */
        c.k = (int)lbk_bnd_between(&rng, 1, 64);
    else
        c.k = PICK(&rng, 1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
                   255, 256, 257, 500, 1000, 1023, 1024, 1025, 2047, 2048, 4095, 4096);
    if (lbk_test_rng_below(&rng, 4) != 0)
        c.tuning =
            (lbk_tuning)T(PICK(&rng, 4, 8, 16), (int)lbk_bnd_between(&rng, 1, 16),
                          (int)lbk_bnd_between(&rng, 1, 8), (int)lbk_bnd_between(&rng, 1, 32),
                          PICK(&rng, 8, 9, 13, 16, 24, 31, 32, 33, 64, 100, 128, 256, 4096));
    c.work_group_limit = lbk_test_rng_below(&rng, 4) == 0 ? PICK(&rng, 3, 5, 7, 16, 32, 64) : 0;
    /* The bubble's K steps per passing element make it slow at large K. */
    c.selection = (lbk_brute_selection)lbk_test_rng_below(&rng, c.k <= 256 ? 3 : 2);
    if (c.selection == LBK_SELECTION_BUBBLE && c.k > 256)
        c.selection = LBK_SELECTION_SORT_MERGE;
    return c;
}

static config group_config(const char *set, uint64_t seed, uint32_t group)
{
    return strcmp(set, "slow") == 0 ? slow_config(seed, group)
                                    : default_pool[group % DEFAULT_GROUPS];
}

/* A budget from just above the smallest the engine can run with (one
 * block of references and a few queries) up to about the whole shard:
 * reference chunks, streamed shards and query batches. */
static uint64_t draw_budget(lbk_test_rng *rng, const shape *s)
{
    const uint64_t row = (uint64_t)s->dim * 4, k = (uint64_t)s->cfg.k;
    uint64_t kp2 = 2;
    while (kp2 < k)
        kp2 *= 2;
    const uint64_t kp = k + (k > 8 ? k : 8);
    const uint64_t vrows = (uint64_t)s->layout.lanes * (uint64_t)s->layout.block_vectors;
    const uint64_t groups = s->groups > 32 ? (uint64_t)s->groups : 32;
    /* A query's bytes at a chunk of `rows`, above the engine's own count
     * (brute_core.c query_bytes): distance row, K-lists, selection scratch,
     * prefilter and cascade buffers. */
#define QUERY_BYTES(rows)                                                                        \
    (row + ((rows) + DIST_TR) * 4 + k * 8 + groups * (kp + 2 * kp2) * 8 + 8 + kp * 8 + row + 12)
    const uint64_t lo = vrows * (row + 4) * 2 + 2 * QUERY_BYTES(vrows);
    const uint64_t hi = 3 * (uint64_t)s->n * (row + 4) + 4 * QUERY_BYTES((uint64_t)s->n);
#undef QUERY_BYTES
    const double f = lbk_test_rng_unit(rng);
    return lo + (uint64_t)((double)(hi > lo ? hi - lo : 0) * f * f);
}

static shape draw_shape(const config *cfg, const lbk_tuning *derived, uint64_t seed,
                        const char *set, uint32_t index)
{
    lbk_test_rng rng = lbk_bnd_rng(seed, set, index);
    shape s = {.cfg = *cfg, .layout = cfg->tuning.lanes ? cfg->tuning : *derived};
    s.distance = cfg->tiled && lbk_test_rng_below(&rng, 3) == 0 ? LBK_DISTANCE_TILED
                                                                : LBK_DISTANCE_BLOCKED;
    s.prefilter = (lbk_brute_prefilter)lbk_test_rng_below(&rng, 4);
    const uint32_t vw = (uint32_t)s.layout.lanes;
    const uint32_t vrows = vw * (uint32_t)s.layout.block_vectors;
    const int k = cfg->k;
    /* Large K: n around K (below it the lists end in pads). */
    const uint32_t nmax = k >= 1000 ? (uint32_t)k + 700 : 3000;
    const uint32_t nblocks[] = {vw, vrows, vrows, DIST_TR, 2 * vrows + vw};
    s.n = lbk_bnd_pick_count(&rng, nblocks, sizeof nblocks / sizeof nblocks[0], nmax);
    if (lbk_test_rng_below(&rng, 8) == 0) { /* K - 1, K or K + 1 rows */
        const int around = k - 1 + (int)lbk_test_rng_below(&rng, 3);
        s.n = around >= 1 ? (uint32_t)around : 1;
    }
    const int slice = s.layout.slice;
    const int edges[] = {1,
                         2,
                         4,
                         8,
                         PREFILTER_MIN_DIM,
                         DIST_TD,
                         CASCADE_MIN_DIM,
                         96,
                         slice,
                         2 * slice,
                         slice + DIST_TD,
                         (int)vw};
    const int dmax = 2 * slice + 2 < 160 ? 160 : 2 * slice + 2 > 300 ? 300 : 2 * slice + 2;
    s.dim = lbk_bnd_pick_dim(&rng, edges, sizeof edges / sizeof edges[0], dmax);
    const uint32_t bq = (uint32_t)s.layout.block_queries;
    const uint32_t qblocks[] = {bq, bq * (uint32_t)s.layout.tile_blocks, 32, CASCADE_PROBE};
    s.nq = lbk_bnd_pick_count(&rng, qblocks, sizeof qblocks / sizeof qblocks[0], 160);
    /* Keep the oracle's work (and the device's) to about 1e7 key terms. */
    const uint64_t work = (uint64_t)s.n * (uint64_t)s.dim * (k > 1000 ? 16 : k > 64 ? 4 : 1);
    if ((uint64_t)s.nq * work > 10000000u)
        s.nq = (uint32_t)(10000000u / work) + 1;
    s.data = (lbk_bnd_data)lbk_test_rng_below(&rng, LBK_BND_DATA_KINDS);
    /* Many groups of long lists cost many sorts: beyond K = 64 at most 7. */
    s.groups = lbk_test_rng_below(&rng, 2) == 0 ? 0
               : k <= PREFILTER_K_MAX           ? PICK(&rng, 1, 2, 3, 7, 32, 100, 5000)
                                                : PICK(&rng, 1, 2, 3, 7);
    s.budget = lbk_test_rng_below(&rng, 5) < 2 ? draw_budget(&rng, &s) : 0;
    s.slice = lbk_test_rng_below(&rng, 3) == 0 ? lbk_bnd_between(&rng, 1, s.nq) : 0;
    return s;
}

static void describe(const shape *s, const char *set, uint32_t index, char *out, size_t size)
{
    static const char *const distances[] = {"auto", "tiled", "blocked"};
    static const char *const prefilters[] = {"auto", "off", "on", "cascade"};
    static const char *const selections[] = {"auto", "bubble", "sort-merge"};
    const lbk_tuning *t = &s->layout;
    snprintf(out, size,
             "brute %s case %u: metric=%s K=%d tuning=%s lanes=%d block=%dx%d tile=%d slice=%d "
             "wg_limit=%d selection=%s distance=%s prefilter=%s n=%u dim=%d nq=%u data=%s "
             "groups=%d budget=%llu caller_slice=%u",
             set, index, metric_names[s->cfg.metric], s->cfg.k,
             s->cfg.tuning.lanes ? "forced" : "derived", t->lanes, t->block_queries,
             t->block_vectors, t->tile_blocks, t->slice, s->cfg.work_group_limit,
             selections[s->cfg.selection], distances[s->distance], prefilters[s->prefilter], s->n,
             s->dim, s->nq, lbk_bnd_data_name(s->data), s->groups, (unsigned long long)s->budget,
             s->slice);
}

/* ---- coverage ---- */

enum {
    COV_PAD_BLOCKS,
    COV_PARTIAL_LANES,
    COV_CHUNKS,
    COV_BATCHES,
    COV_CALLER_SLICES,
    COV_K_ABOVE_N,
    COV_K_EQUALS_N,
    COV_N_ONE,
    COV_DIM_PAST_SLICE,
    COV_TILED_DIM_TAIL,
    COV_PREFILTER,
    COV_PREFILTER_FALLBACK,
    COV_CASCADE,
    COV_SORT_MERGE,
    COV_COUNT
};

static lbk_bnd_coverage coverage[COV_COUNT] = {
    [COV_PAD_BLOCKS] = {"blocked layout with whole padding blocks past the last row", 20, 0},
    [COV_PARTIAL_LANES] = {"blocked layout with a partial last block (n % lanes != 0)", 40, 0},
    [COV_CHUNKS] = {"reference chunks (chunk < n)", 10, 0},
    [COV_BATCHES] = {"engine query batches (max batch < queries of a call)", 10, 0},
    [COV_CALLER_SLICES] = {"several lbk_brute_query calls", 20, 0},
    [COV_K_ABOVE_N] = {"K > n (pads in every list)", 20, 0},
    [COV_K_EQUALS_N] = {"K == n", 2, 0},
    [COV_N_ONE] = {"n == 1", 2, 0},
    [COV_DIM_PAST_SLICE] = {"blocked, dimension past the tuning's slice", 10, 0},
    [COV_TILED_DIM_TAIL] = {"tiled, dimension past 32 and not a multiple of it", 2, 0},
    [COV_PREFILTER] = {"prefilter path taken", 10, 0},
    [COV_PREFILTER_FALLBACK] = {"prefilter queries sent to the exact path", 2, 0},
    [COV_CASCADE] = {"cascade path taken", 2, 0},
    [COV_SORT_MERGE] = {"sort-merge selection", 30, 0},
};

static void count_coverage(const shape *s, uint64_t chunk, uint64_t batch,
                           const lbk_brute_timing *t)
{
    const uint32_t vw = (uint32_t)s->layout.lanes;
    const uint32_t vrows = vw * (uint32_t)s->layout.block_vectors;
    const bool blocked = s->distance == LBK_DISTANCE_BLOCKED;
    const uint64_t call = s->slice ? s->slice : s->nq;
    const bool hit[COV_COUNT] = {
        [COV_PAD_BLOCKS] =
            blocked && (s->n + vw - 1) / vw * vw < (s->n + vrows - 1) / vrows * vrows,
        [COV_PARTIAL_LANES] = blocked && s->n % vw != 0,
        [COV_CHUNKS] = chunk < s->n,
        [COV_BATCHES] = batch < call,
        [COV_CALLER_SLICES] =
            s->slice && s->slice<s->nq, [COV_K_ABOVE_N] = (uint32_t)s->cfg.k> s->n,
        [COV_K_EQUALS_N] = (uint32_t)s->cfg.k == s->n,
        [COV_N_ONE] = s->n == 1,
        [COV_DIM_PAST_SLICE] = blocked && s->dim > s->layout.slice,
        [COV_TILED_DIM_TAIL] = !blocked && s->dim > DIST_TD && s->dim % DIST_TD != 0,
        [COV_PREFILTER] = t->prefiltered_queries > 0,
        [COV_PREFILTER_FALLBACK] = t->fallback_queries > 0,
        [COV_CASCADE] = t->cascade_queries > 0,
        [COV_SORT_MERGE] = s->cfg.selection == LBK_SELECTION_SORT_MERGE ||
                           (s->cfg.selection == LBK_SELECTION_AUTO && s->cfg.k >= SORT_K_MIN),
    };
    for (int i = 0; i < COV_COUNT; i++)
        coverage[i].count += hit[i];
}

/* ---- running a case ---- */

/* The queries [off, off + m) through one lbk_brute_query call, on arrays
 * of exactly their size, into got. */
static bool query_slice(lbk_brute *engine, const shape *s, const float *queries, uint32_t off,
                        uint32_t m, float *got_k, uint32_t *got_i, lbk_brute_timing *sum,
                        const char *what)
{
    const size_t k = (size_t)s->cfg.k;
    float *q = lbk_bnd_copy(queries + (size_t)off * s->dim, (size_t)m * s->dim);
    lbk_knn_result r = {.queries = m, .k = s->cfg.k};
    r.keys = lbk_bnd_alloc((size_t)m * k * sizeof *r.keys);
    r.index = lbk_bnd_alloc((size_t)m * k * sizeof *r.index);
    const lbk_status st = lbk_brute_query(engine, q, m, &r);
    const bool ok = LBK_EXPECT_EQ_INT(st, LBK_OK, "%s: queries [%u, +%u): %s", what, off, m,
                                      lbk_status_name(st));
    if (ok) {
        memcpy(got_k + (size_t)off * k, r.keys, (size_t)m * k * sizeof *got_k);
        memcpy(got_i + (size_t)off * k, r.index, (size_t)m * k * sizeof *got_i);
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        lbk_brute_timing_add(sum, &t);
    }
    lbk_bnd_free(q);
    lbk_bnd_free(r.keys);
    lbk_bnd_free(r.index);
    return ok;
}

static void run_case(lbk_device *dev, const shape *s, uint64_t seed, uint32_t index,
                     const char *what)
{
    lbk_test_rng rng = lbk_bnd_rng(seed, "brute.data", index);
    const size_t k = (size_t)s->cfg.k, slots = (size_t)s->nq * k;
    float *ref = lbk_bnd_alloc((size_t)s->n * s->dim * sizeof *ref);
    float *queries = lbk_bnd_alloc((size_t)s->nq * s->dim * sizeof *queries);
    float *want_k = malloc(slots * sizeof *want_k), *got_k = malloc(slots * sizeof *got_k);
    uint32_t *want_i = malloc(slots * sizeof *want_i), *got_i = malloc(slots * sizeof *got_i);
    LBK_ASSERT_TRUE(want_k && got_k && want_i && got_i, "out of memory");
    lbk_bnd_fill(ref, s->n, s->dim, s->data, &rng);
    lbk_bnd_fill(queries, s->nq, s->dim, s->data == LBK_BND_DUPLICATES ? LBK_BND_GRID : s->data,
                 &rng);
    lbk_bnd_copy_rows(queries, s->nq, ref, s->n, s->dim, &rng);
    if (s->cfg.metric == COS) { /* the run normalises on the host, right after reading */
        oracle_normalize(ref, s->n, s->dim);
        oracle_normalize(queries, s->nq, s->dim);
    }
    LBK_ASSERT_EQ_INT(
        oracle_knn(ref, s->n, queries, s->nq, s->dim, s->cfg.metric, s->cfg.k, want_k, want_i), 0,
        "oracle out of memory");

    const lbk_dataset data = {.rows = s->n, .dim = s->dim, .points = ref};
    const lbk_brute_params params = {.k = s->cfg.k,
                                     .metric = (lbk_metric)s->cfg.metric,
                                     .groups = s->groups,
                                     .memory_budget = s->budget,
                                     .distance = s->distance,
                                     .prefilter = s->prefilter,
                                     .work_group_limit = s->cfg.work_group_limit,
                                     .selection = s->cfg.selection,
                                     .tuning = s->cfg.tuning.lanes ? &s->cfg.tuning : NULL};
    lbk_brute *engine = NULL;
    const lbk_status st = lbk_brute_create(dev, &data, &params, &engine);
    if (LBK_EXPECT_EQ_INT(st, LBK_OK, "%s: lbk_brute_create: %s", what, lbk_status_name(st))) {
        const uint32_t step = s->slice ? s->slice : s->nq;
        lbk_brute_timing sum = {0};
        bool ok = true;
        for (uint32_t off = 0; off < s->nq && ok; off += step)
            ok = query_slice(engine, s, queries, off, s->nq - off < step ? s->nq - off : step,
                             got_k, got_i, &sum, what);
        if (ok) {
            lbk_bnd_compare(got_k, got_i, want_k, want_i, s->nq, s->cfg.k, what);
            count_coverage(s, lbk_brute_chunk_rows(engine), lbk_brute_max_batch(engine), &sum);
        }
    }
    lbk_brute_destroy(engine);
    lbk_bnd_free(ref);
    lbk_bnd_free(queries);
    free(want_k);
    free(got_k);
    free(want_i);
    free(got_i);
}

/* run_case's arguments, for lbk_bnd_run_case. */
typedef struct {
    lbk_device *dev;
    const shape *s;
    uint64_t seed;
    uint32_t index;
    const char *what;
} case_run;

static void run_one(void *ctx)
{
    const case_run *c = ctx;
    run_case(c->dev, c->s, c->seed, c->index, c->what);
}

static void run_set(const char *set, uint64_t seed, uint32_t groups, uint32_t group_size)
{
    lbk_test_require_opencl();
    lbk_bnd_options o;
    lbk_bnd_parse(&o, seed, groups * group_size);
    lbk_bnd_catch_crashes();
    lbk_device *dev = NULL;
    lbk_tuning derived;
    uint32_t open_group = UINT32_MAX, failed = 0;
    for (uint32_t i = o.first; i < o.first + o.count; i++) {
        /* A fresh device per group: its programs are built once for the
         * group's cases (the device keeps at most 32). */
        const uint32_t group = i / group_size;
        if (group != open_group) {
            lbk_device_close(dev);
            dev = NULL;
            const lbk_device_request req = {.type = LBK_DEVICE_ANY};
            LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
            lbk_tuning_derive(dev, &derived);
            open_group = group;
        }
        const config cfg = group_config(set, o.seed, group);
        const shape s = draw_shape(&cfg, &derived, o.seed, set, i);
        char what[768];
        describe(&s, set, i, what, sizeof what);
        case_run c = {dev, &s, o.seed, i, what};
        failed += lbk_bnd_run_case(set, o.seed, i, what, run_one, &c);
    }
    lbk_device_close(dev);
    lbk_bnd_set_done(failed, &o, coverage, COV_COUNT);
}

static void set_default(void) { run_set("default", 20240611u, DEFAULT_GROUPS, GROUP); }
static void set_slow(void) { run_set("slow", 977u, SLOW_GROUPS, SLOW_GROUP); }

static const lbk_test_case sets[] = {
    {"default", set_default},
    {"slow", set_slow},
};

LBK_TEST_MAIN(LBK_TEST_CASES(sets))
