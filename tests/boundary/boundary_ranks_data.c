/* One multi-rank boundary case (ranks.sh): its data set, as fvecs points
 * with ivecs labels (the layout `lbknn generate` writes and
 * tests/e2e/verify_outputs reads), and a job.yaml that runs it, all drawn
 * from (set, seed, case number) alone. Independent of src/.
 *
 *   boundary_ranks_data DIR SET SEED CASE
 *
 * prints "NP K METRIC WEIGHTS ENGINE PARTITION" on its first line and the
 * case's whole shape on the second. The shapes: 1 to 4 ranks; shards of
 * 0 or 1 row, and shards next to multiples of the blocked layout's blocks
 * and of the tiles; K up to the reference count (4096 on brute force, 1024
 * on the tree), below and above the rows of a shard; fewer queries than
 * ranks; every partition (shard, replicate, spatial) and merge (reduce,
 * reduce_scatter); both engines, every metric and vote rule; query batches
 * (device.batch), a 1 MB device budget (reference chunks), bubble groups,
 * kernel tunings. The default set draws the brute-force engine's
 * compile-time parameters (metric, K, tuning) from a small pool shared
 * with boundary_brute's default set; the k-d tree has none. */
#include "lbk_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { L2, L1, LINF, COS, IP };
static const char *const metrics[] = {"l2", "l1", "linf", "cosine", "ip"};

typedef struct {
    int metric, k;
    int lanes, block_queries, block_vectors, tile_blocks, slice; /* 0: the device's */
} brute_config;

/* boundary_brute's default groups 1 and 2 (their programs are built once
 * for both) and tests/mpi's brute-force runs (the device's tuning: cosine
 * and ip at K = 12, L1 at 8, Linf at 6). */
static const brute_config default_pool[] = {
    {L2, 5, 4, 3, 2, 2, 16}, {COS, 16, 16, 3, 5, 32, 4096}, {IP, 12, 0, 0, 0, 0, 0},
    {L1, 8, 0, 0, 0, 0, 0},  {LINF, 6, 0, 0, 0, 0, 0},
};

typedef struct {
    int np;
    bool tree;
    brute_config cfg;
    const char *weights, *partition, *merge, *split, *sort;
    uint32_t n, nq, classes;
    int dim;
    int data; /* 0 grid, 1 uniform, 2 duplicates, 3 smooth */
    uint32_t batch, groups, memory_mb;
} shape;

static uint64_t below(lbk_test_rng *rng, uint64_t n) { return lbk_test_rng_below(rng, n); }

static uint32_t between(lbk_test_rng *rng, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)below(rng, (uint64_t)hi - lo + 1);
}

/* Rows per shard next to a multiple of `block`: m * block + r. */
static uint32_t near_multiple(lbk_test_rng *rng, uint32_t block, uint32_t max)
{
    const uint32_t rs[] = {0, 1, block - 1, block / 2, (uint32_t)below(rng, block)};
    const uint32_t top = max / block;
    const uint32_t m = below(rng, 2) ? (uint32_t)below(rng, 4) : (uint32_t)below(rng, top + 1);
    const uint32_t v = (m > top ? top : m) * block + rs[below(rng, 5)];
    return v > max ? max : v;
}

static shape draw(const char *set, uint64_t seed, uint32_t index)
{
    const bool slow = strcmp(set, "slow") == 0;
    uint64_t h = lbk_test_mix64(seed);
    for (const char *p = set; *p; p++)
        h = lbk_test_mix64(h ^ (unsigned char)*p);
    lbk_test_rng rng = LBK_TEST_RNG(lbk_test_mix64(h ^ lbk_test_mix64(index)));
    /* The default set walks every rank count with every partition (12
     * cases: 4 x 3) and alternates the merge; the slow set draws them. */
    const int part = slow ? (int)below(&rng, 3) : (int)(index % 3);
    shape s = {.np = slow ? (int)between(&rng, 1, 4) : (int)(index % 4) + 1,
               .tree = below(&rng, 3) == 0};
    s.partition = (const char *[]){"shard", "replicate", "spatial"}[part];
    s.merge = (slow ? below(&rng, 2) : index / 3 % 2) ? "reduce_scatter" : "reduce";
    if (s.tree) {
        s.cfg.metric = (int)below(&rng, 3);
    } else if (slow) {
        s.cfg.metric = (int)below(&rng, 5);
        if (below(&rng, 3) == 0) {
            s.cfg.lanes = (int[]){4, 8, 16}[below(&rng, 3)];
            s.cfg.block_queries = (int)between(&rng, 1, 8);
            s.cfg.block_vectors = (int)between(&rng, 1, 8);
            s.cfg.tile_blocks = (int)between(&rng, 1, 8);
            s.cfg.slice = (int[]){8, 13, 32, 128}[below(&rng, 4)];
        }
    } else {
        s.cfg = default_pool[below(&rng, sizeof default_pool / sizeof default_pool[0])];
    }
    /* The spatial partition bounds L_p distances by boxes: not for cosine
     * and ip, which take L2 instead (the pool's first, on brute force). */
    if (part == 2 && (s.cfg.metric == COS || s.cfg.metric == IP)) {
        if (slow)
            s.cfg.metric = (int)below(&rng, 3);
        else
            s.cfg = default_pool[0];
    }
    /* Distance weights need a distance, which ip has not. */
    s.weights = (const char *[]){"uniform", "softmax",
                                 "distance"}[below(&rng, s.cfg.metric == IP ? 2 : 3)];
    s.split = below(&rng, 2) ? "widest" : "round_robin";
    s.sort = (const char *[]){"auto", "bitonic", "radix", "select"}[below(&rng, 4)];
    if (strcmp(s.sort, "select") == 0) /* the select builder splits round robin only */
        s.split = "round_robin";
    /* Shard rows: empty, one, or next to the blocked layout's blocks (8 x 2
     * on an AVX2 device, the pool's 4 x 2, 16 x 5, 8 x 2) and 32-row tiles. */
    const uint32_t blocks[] = {4, 8, 16, 32, 80};
    const uint32_t per_shard_max = slow ? 1500 : 700;
    uint32_t shard;
    switch (below(&rng, 6)) {
    case 0: shard = 0; break;
    case 1: shard = 1; break;
    default: shard = near_multiple(&rng, blocks[below(&rng, 5)], per_shard_max);
    }
    /* The default set's 4-rank shard and spatial cases: shards of one row,
     * and fewer rows than ranks (empty shards, empty boxes). */
    if (!slow && index % 12 == 3)
        shard = 1;
    if (!slow && index % 12 == 11)
        shard = 0;
    s.n = shard * (uint32_t)s.np + (uint32_t)below(&rng, 4) % (uint32_t)s.np;
    if (s.n == 0)
        s.n = 1 + (uint32_t)below(&rng, (uint64_t)s.np); /* fewer rows than ranks */
    /* K up to n (a run refuses more): small, next to a shard's rows, or any. */
    const int kmax = s.tree ? 1024 : 4096;
    const uint32_t kcap = s.n < (uint32_t)kmax ? s.n : (uint32_t)kmax;
    if (s.tree || slow) {
        int k;
        switch (below(&rng, 4)) {
        case 0: k = (int)between(&rng, 1, kcap < 20 ? kcap : 20); break;
        case 1: k = (int)shard - 1 + (int)below(&rng, 3); break;
        case 2: k = (int)between(&rng, 1, kcap); break;
        default: k = (int)kcap;
        }
        s.cfg.k = k < 1 ? 1 : k > (int)kcap ? (int)kcap : k;
    } else if ((uint32_t)s.cfg.k > s.n) {
        s.n = (uint32_t)s.cfg.k + (uint32_t)below(&rng, 3); /* the pool's K must fit */
    }
    const int dim_edges[] = {1, 2, 3, 4, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96};
    s.dim = s.tree ? (int)between(&rng, 1, 6)
                   : dim_edges[below(&rng, sizeof dim_edges / sizeof dim_edges[0])];
    s.nq = below(&rng, 4) == 0 ? between(&rng, 1, (uint32_t)s.np) /* fewer than ranks */
                               : between(&rng, 1, slow ? 300 : 120);
    /* The oracle's and the device's work: about 1e7 key terms. */
    const uint64_t work = (uint64_t)s.n * (uint64_t)s.dim * (s.cfg.k > 256 ? 8 : 1);
    if ((uint64_t)s.nq * work > 10000000u)
        s.nq = (uint32_t)(10000000u / work) + 1;
    s.classes = between(&rng, 1, 8);
    s.data = (int)below(&rng, 4);
    s.batch = below(&rng, 2) ? between(&rng, 1, s.nq) : 0;
    s.groups = !s.tree && below(&rng, 3) == 0 ? (uint32_t[]){1, 3, 100}[below(&rng, 3)] : 0;
    /* 1 MB: reference chunks on brute force (K's lists still fit); the
     * radix builder alone needs more (its histograms). */
    s.memory_mb =
        below(&rng, 4) == 0 && s.cfg.k <= 100 && !(s.tree && strcmp(s.sort, "radix") == 0) ? 1
                                                                                           : 0;
    return s;
}

static void fill(float *x, uint32_t rows, int dim, int kind, lbk_test_rng *rng)
{
    for (uint32_t i = 0; i < rows; i++) {
        float *row = x + (size_t)i * dim;
        if (kind == 2 && i >= 5) {
            memcpy(row, x + below(rng, 5) * (size_t)dim, (size_t)dim * sizeof *x);
            continue;
        }
        for (int j = 0; j < dim; j++)
            row[j] = kind == 1   ? (float)below(rng, 2000001u) / 1000000.0f - 1.0f
                     : kind == 3 ? (j ? row[j - 1] : 0.0f) +
                                       (float)below(rng, 100001u) / 1000000.0f - 0.05f
                                 : (float)(int)below(rng, 4) - 1.0f;
    }
}

/* TEXMEX: each row its dimension (int32) and then its values. */
static int write_vecs(const char *dir, const char *name, const void *data, uint32_t rows, int dim)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    const int32_t d = dim;
    for (uint32_t r = 0; r < rows; r++)
        if (fwrite(&d, 4, 1, f) != 1 ||
            fwrite((const char *)data + (size_t)r * dim * 4, 4, (size_t)dim, f) != (size_t)dim) {
            fclose(f);
            return -1;
        }
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: boundary_ranks_data DIR SET SEED CASE\n");
        return 2;
    }
    const char *dir = argv[1], *set = argv[2];
    const uint64_t seed = strtoull(argv[3], NULL, 0);
    const uint32_t index = (uint32_t)strtoul(argv[4], NULL, 0);
    const shape s = draw(set, seed, index);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "boundary_ranks_data: cannot create %s\n", dir);
        return 1;
    }
    uint64_t h = lbk_test_mix64(seed ^ 0x5eedu);
    lbk_test_rng rng = LBK_TEST_RNG(lbk_test_mix64(h ^ index));
    float *ref = malloc((size_t)s.n * s.dim * sizeof *ref + 4);
    float *q = malloc((size_t)s.nq * s.dim * sizeof *q + 4);
    int32_t *rl = malloc((size_t)s.n * sizeof *rl + 4),
            *ql = malloc((size_t)s.nq * sizeof *ql + 4);
    if (!ref || !q || !rl || !ql)
        return fprintf(stderr, "boundary_ranks_data: out of memory\n"), 1;
    fill(ref, s.n, s.dim, s.data, &rng);
    fill(q, s.nq, s.dim, s.data == 2 ? 0 : s.data, &rng);
    for (uint32_t i = 0; i < s.nq; i += 3) /* zero keys and ties */
        memcpy(q + (size_t)i * s.dim, ref + below(&rng, s.n) * (size_t)s.dim,
               (size_t)s.dim * sizeof *q);
    for (uint32_t i = 0; i < s.n; i++)
        rl[i] = (int32_t)below(&rng, s.classes);
    for (uint32_t i = 0; i < s.nq; i++)
        ql[i] = (int32_t)below(&rng, s.classes);
    if (write_vecs(dir, "reference.fvecs", ref, s.n, s.dim) ||
        write_vecs(dir, "reference-labels.ivecs", rl, s.n, 1) ||
        write_vecs(dir, "query.fvecs", q, s.nq, s.dim) ||
        write_vecs(dir, "query-labels.ivecs", ql, s.nq, 1))
        return fprintf(stderr, "boundary_ranks_data: cannot write into %s\n", dir), 1;
    free(ref);
    free(q);
    free(rl);
    free(ql);

    char shape_line[1024];
    snprintf(shape_line, sizeof shape_line,
             "ranks %s case %u: np=%d engine=%s partition=%s merge=%s metric=%s K=%d "
             "weights=%s n=%u (shards of about %u) dim=%d nq=%u classes=%u data=%s batch=%u "
             "groups=%u memory_mb=%u split=%s sort=%s tuning=%d/%dx%d/%d/%d",
             set, index, s.np, s.tree ? "kdtree" : "brute", s.partition, s.merge,
             metrics[s.cfg.metric], s.cfg.k, s.weights, s.n, s.n / (uint32_t)s.np, s.dim, s.nq,
             s.classes, (const char *[]){"grid", "uniform", "duplicates", "smooth"}[s.data],
             s.batch, s.groups, s.memory_mb, s.split, s.sort, s.cfg.lanes, s.cfg.block_queries,
             s.cfg.block_vectors, s.cfg.tile_blocks, s.cfg.slice);
    char path[4096];
    snprintf(path, sizeof path, "%s/job.yaml", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return fprintf(stderr, "boundary_ranks_data: cannot write %s\n", path), 1;
    fprintf(f,
            "# %s\n"
            "reference: {path: reference.fvecs, labels: reference-labels.ivecs}\n"
            "query: {path: query.fvecs, labels: query-labels.ivecs}\n"
            "knn: {k: %d, metric: %s, weights: %s, engine: %s}\n"
            "device: {batch: %u, groups: %u, memory_mb: %u}\n"
            "tree: {split: %s, sort: %s}\n"
            "tuning: {cache: false, lanes: %d, block_queries: %d, block_vectors: %d, "
            "tile_blocks: %d, slice: %d}\n"
            "mpi: {partition: %s, merge: %s}\n",
            shape_line, s.cfg.k, metrics[s.cfg.metric], s.weights, s.tree ? "kdtree" : "brute",
            s.batch, s.groups, s.memory_mb, s.split, s.sort, s.cfg.lanes, s.cfg.block_queries,
            s.cfg.block_vectors, s.cfg.tile_blocks, s.cfg.slice, s.partition, s.merge);
    if (fclose(f) != 0)
        return fprintf(stderr, "boundary_ranks_data: cannot write %s\n", path), 1;
    printf("%d %d %s %s %s %s\n%s\n", s.np, s.cfg.k, metrics[s.cfg.metric], s.weights,
           s.tree ? "kdtree" : "brute", s.partition, shape_line);
    return 0;
}
