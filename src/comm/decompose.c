/* The spatial decomposition: exact distributed plane selection (radix
 * select over the key (coordinate image, global id), one MPI_Allreduce per
 * digit and level), the points' move to their owners, and the boxes. */
#include "decompose.h"

#include "alloc_large.h"
#include "comm_mpi.h"
#include "exchange.h"
#include "log.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The key (coordinate image, id) is read from the top in digits: the
 * image's 32 bits, then as many bytes of the id as the largest id needs. */
#define IMAGE_BITS 32
#define DIGIT_BITS 8
/* The counts one round may reduce over all of a level's groups. The first
 * round's digit is as wide as this allows (16 bits for one group),
 * so that one pass over the rows leaves few of them matching: on uniform
 * data in [0, 1), 0.2 % against 38 % with an 8-bit first digit, which is
 * mostly the exponent. Later rounds read only the matching rows. */
#define HIST_ENTRIES ((size_t)1 << 16)
#define FIRST_BITS_MAX 16
/* mpi.balance: queries: the queries' share of the weight a plane splits
 * (the points' is 1 - this). A query costs the query phase a walk and its
 * K-list wherever it lands, a point nothing until a query comes near it, so
 * the queries carry nearly all of it; the points' share only places the
 * planes where there are no queries (a rank's points are bounded by the
 * weight, not by N/P). 15/16 left the busiest rank of the skewed bench at
 * P = 16 with 1.18 x the mean work, 63/64 with 1.14 (bench/RESULTS.md,
 * run Q). */
#define BALANCE_QUERY_SHARE (63.0 / 64.0)

typedef struct {
    const lbk_decompose_shard *in;
    lbk_toptree *tree;
    lbk_tree_split split;
    int id_bits;
    size_t id_size;  /* bytes of an id on the wire and in the result: 4 or 8 */
    int *node_of;    /* each local point's node; its rank once placed */
    uint64_t *match; /* after the first round: the rows still matching */
    uint64_t matching, match_cap;
    int *slot;      /* node -> index among the level's splitting groups, or -1 */
    int *active;    /* the level's splitting groups (node indices) */
    int *split_dim; /* per group: its plane's dimension */
    int groups;
    uint64_t *want;         /* per group: the plane point's rank among the matching points */
    uint32_t *chosen;       /* per group: this round's digit */
    int unique;             /* groups whose chosen bucket holds one point, this round */
    int pos, width;         /* this round's digit: key bits [pos, pos + width) from the top */
    uint64_t *hist, *local; /* groups << width counts: every rank's, this rank's */
    float *box;             /* groups * 2 * dim: lo, then -hi (one MIN reduction) */
    int *qnode_of;          /* balance: each local query's node */
    double query_weight;    /* balance: one query's weight, a point's being 1 */
} decomposer;

static void decomposer_free(decomposer *d)
{
    lbk_alloc_large_free(d->node_of);
    free(d->qnode_of);
    free(d->match);
    free(d->slot);
    free(d->active);
    free(d->split_dim);
    free(d->want);
    free(d->chosen);
    free(d->hist);
    free(d->local);
    free(d->box);
}

static lbk_status decomposer_alloc(decomposer *d, const lbk_decompose_shard *in,
                                   lbk_toptree *tree, lbk_tree_split split)
{
    const size_t rows = (size_t)in->rows + 1, p = (size_t)tree->ranks;
    const size_t entries = p * 256 > HIST_ENTRIES ? p * 256 : HIST_ENTRIES;
    d->in = in;
    d->tree = tree;
    d->split = split;
    for (uint64_t last = in->total_rows ? in->total_rows - 1 : 0; last; last >>= 8)
        d->id_bits += 8;
    d->id_size = in->total_rows <= (uint64_t)UINT32_MAX + 1 && !in->wide_ids ? sizeof(uint32_t)
                                                                             : sizeof(uint64_t);
    d->node_of = lbk_alloc_large(rows * sizeof *d->node_of);
    d->slot = malloc((size_t)tree->count * sizeof *d->slot);
    d->active = malloc(p * sizeof *d->active);
    d->split_dim = malloc(p * sizeof *d->split_dim);
    d->want = malloc(p * sizeof *d->want);
    d->chosen = malloc(p * sizeof *d->chosen);
    d->hist = malloc(entries * sizeof *d->hist);
    d->local = malloc(entries * sizeof *d->local);
    d->box = malloc(p * 2 * (size_t)in->dim * sizeof *d->box);
    d->qnode_of = in->balance ? calloc((size_t)in->query_rows + 1, sizeof *d->qnode_of) : NULL;
    LBK_FAIL_IF(!d->node_of || !d->slot || !d->active || !d->split_dim || !d->want ||
                    !d->chosen || !d->hist || !d->local || !d->box ||
                    (in->balance && !d->qnode_of),
                LBK_ERR_NOMEM, "out of host memory for the spatial decomposition (%llu points)",
                (unsigned long long)in->rows);
    memset(d->node_of, 0, rows * sizeof *d->node_of);
    return LBK_OK;
}

/* Value `at` of the shard's row-major points, float32 or compact. */
static inline float coord(const lbk_decompose_shard *in, uint64_t at)
{
    return in->value_of ? in->value_of(in->raw, at) : in->points[at];
}

/* Bytes of one point as it moves. */
static size_t point_bytes(const lbk_decompose_shard *in)
{
    return (size_t)in->dim * (in->value_of ? in->value_bytes : sizeof(float));
}

static uint32_t point_image(const decomposer *d, uint64_t i, int g)
{
    return lbk_toptree_order_image(
        coord(d->in, i * (uint64_t)d->in->dim + (uint64_t)d->split_dim[g]));
}

/* Where this round's digit sits: its shift within the image, or within the
 * id once the image's bits are read. */
static int digit_shift(const decomposer *d)
{
    return d->pos < IMAGE_BITS ? IMAGE_BITS - d->pos - d->width
                               : d->id_bits - (d->pos - IMAGE_BITS) - d->width;
}

/* Row i's digit of this round, i in group g. */
static uint32_t key_digit(const decomposer *d, uint64_t i, int g)
{
    const uint32_t mask = (1u << d->width) - 1;
    if (d->pos < IMAGE_BITS)
        return (point_image(d, i, g) >> digit_shift(d)) & mask;
    return (uint32_t)((d->in->first_row + i) >> digit_shift(d)) & mask;
}

/* The first round's digit as wide as HIST_ENTRIES allows; then bytes, never
 * across the image's end. */
static int round_width(const decomposer *d, int round)
{
    if (round == 0) {
        int w = FIRST_BITS_MAX;
        while (w > DIGIT_BITS && ((size_t)d->groups << w) > HIST_ENTRIES)
            w--;
        return w;
    }
    const int end = d->pos < IMAGE_BITS ? IMAGE_BITS : IMAGE_BITS + d->id_bits;
    return end - d->pos < DIGIT_BITS ? end - d->pos : DIGIT_BITS;
}

/* Group g's digit of this round: the bucket holding its plane point. */
static lbk_status pick_bucket(decomposer *d, int g)
{
    const uint64_t *h = d->hist + ((size_t)g << d->width);
    lbk_toptree_node *n = &d->tree->nodes[d->active[g]];
    uint64_t before = 0;
    for (uint32_t b = 0; b >> d->width == 0; b++) {
        if (d->want[g] < before + h[b]) {
            d->want[g] -= before;
            d->chosen[g] = b;
            d->unique += h[b] == 1;
            if (d->pos < IMAGE_BITS)
                n->image |= b << digit_shift(d);
            else
                n->id |= (uint64_t)b << digit_shift(d);
            return LBK_OK;
        }
        before += h[b];
    }
    lbk_error("internal: spatial decomposition: ranks %d-%d hold %llu candidates for the "
              "plane, fewer than its rank %llu",
              n->first, n->first + n->ranks - 1, (unsigned long long)before,
              (unsigned long long)d->want[g]);
    return LBK_ERR_INTERNAL;
}

/* Collective: this round's counts over every rank, and each group's digit.
 * The first round counts every row of a splitting group, later ones only
 * the matching rows. */
static lbk_status count_and_pick(const lbk_comm *comm, decomposer *d, bool first)
{
    const size_t buckets = (size_t)1 << d->width;
    memset(d->local, 0, (size_t)d->groups * buckets * sizeof *d->local);
    if (first) {
        for (uint64_t i = 0; i < d->in->rows; i++) {
            const int s = d->slot[d->node_of[i]];
            if (s >= 0)
                d->local[(size_t)s * buckets + key_digit(d, i, s)]++;
        }
    } else {
        for (uint64_t m = 0; m < d->matching; m++) {
            const uint64_t i = d->match[m];
            const int s = d->slot[d->node_of[i]];
            d->local[(size_t)s * buckets + key_digit(d, i, s)]++;
        }
    }
    LBK_TRY(lbk_comm_mpi_allreduce(comm, d->local, d->hist, (int)((size_t)d->groups * buckets),
                                   sizeof *d->hist, MPI_UINT64_T, MPI_SUM,
                                   "MPI_Allreduce (spatial plane selection)"));
    d->unique = 0;
    for (int g = 0; g < d->groups; g++)
        LBK_TRY(pick_bucket(d, g));
    return LBK_OK;
}

/* The rows whose digit is their group's: after the first round a new list
 * (as long as this rank's counts of the chosen buckets), after later ones
 * the list compacted. */
static lbk_status keep_matching(decomposer *d, bool first)
{
    uint64_t kept = 0;
    if (!first) {
        for (uint64_t m = 0; m < d->matching; m++) {
            const uint64_t i = d->match[m];
            const int s = d->slot[d->node_of[i]];
            if (key_digit(d, i, s) == d->chosen[s])
                d->match[kept++] = i;
        }
        d->matching = kept;
        return LBK_OK;
    }
    uint64_t mine = 0;
    for (int g = 0; g < d->groups; g++)
        mine += d->local[((size_t)g << d->width) + d->chosen[g]];
    if (mine > d->match_cap) {
        free(d->match);
        d->match = malloc((size_t)mine * sizeof *d->match);
        d->match_cap = d->match ? mine : 0;
        LBK_FAIL_IF(!d->match, LBK_ERR_NOMEM,
                    "out of host memory for the spatial plane selection (%llu points)",
                    (unsigned long long)mine);
    }
    for (uint64_t i = 0; i < d->in->rows; i++) {
        const int s = d->slot[d->node_of[i]];
        if (s >= 0 && key_digit(d, i, s) == d->chosen[s])
            d->match[kept++] = i;
    }
    d->matching = kept;
    return LBK_OK;
}

/* Once every group's plane point is the only point still matching, its
 * rank sends its whole key (one MAX over ranks; the others send 0) and the
 * remaining rounds are not needed. */
static lbk_status finish_unique(const lbk_comm *comm, decomposer *d)
{
    uint64_t *key = d->hist; /* groups * 2: image, id */
    memset(key, 0, (size_t)d->groups * 2 * sizeof *key);
    for (uint64_t m = 0; m < d->matching; m++) {
        const uint64_t i = d->match[m];
        const size_t g = (size_t)d->slot[d->node_of[i]];
        key[2 * g] = point_image(d, i, (int)g);
        key[2 * g + 1] = d->in->first_row + i;
    }
    LBK_TRY(lbk_comm_mpi_allreduce(comm, MPI_IN_PLACE, key, d->groups * 2, sizeof *key,
                                   MPI_UINT64_T, MPI_MAX, "MPI_Allreduce (spatial plane keys)"));
    for (int g = 0; g < d->groups; g++) {
        lbk_toptree_node *n = &d->tree->nodes[d->active[g]];
        n->image = (uint32_t)key[2 * g];
        n->id = key[2 * g + 1];
    }
    return LBK_OK;
}

/* One digit of every group's plane key: global counts per bucket, then the
 * rows outside the chosen bucket stop matching. *done when every plane
 * point is known. */
static lbk_status select_round(const lbk_comm *comm, decomposer *d, int round, bool *done)
{
    d->width = round_width(d, round);
    LBK_TRY(count_and_pick(comm, d, round == 0));
    const lbk_status st = keep_matching(d, round == 0);
    /* Only the first round allocates. */
    LBK_TRY(round == 0 ? lbk_comm_agree(comm, st) : st);
    d->pos += d->width;
    *done = d->pos == IMAGE_BITS + d->id_bits;
    if (*done || d->unique < d->groups)
        return LBK_OK;
    *done = true;
    return finish_unique(comm, d);
}

/* The widest rule: each group's bounding box over every rank's points. */
static lbk_status widest_dims(const lbk_comm *comm, decomposer *d)
{
    const int dim = d->in->dim;
    const size_t per = 2 * (size_t)dim;
    for (size_t i = 0; i < (size_t)d->groups * per; i++)
        d->box[i] = INFINITY;
    for (uint64_t i = 0; i < d->in->rows; i++) {
        const int s = d->slot[d->node_of[i]];
        if (s < 0)
            continue;
        float *b = d->box + (size_t)s * per;
        for (int j = 0; j < dim; j++) {
            const float v = coord(d->in, i * (uint64_t)dim + (uint64_t)j);
            b[j] = v < b[j] ? v : b[j];
            b[dim + j] = -v < b[dim + j] ? -v : b[dim + j];
        }
    }
    LBK_TRY(lbk_comm_mpi_allreduce(comm, MPI_IN_PLACE, d->box, d->groups * (int)per,
                                   sizeof *d->box, MPI_FLOAT, MPI_MIN,
                                   "MPI_Allreduce (spatial group boxes)"));
    for (int g = 0; g < d->groups; g++) {
        const float *b = d->box + (size_t)g * per;
        float best = -INFINITY;
        for (int j = 0; j < dim; j++) {
            const float w = -b[dim + j] - b[j];
            if (w >= best) { /* ties to the highest dimension, as the local tree */
                best = w;
                d->tree->nodes[d->active[g]].dim = j;
            }
        }
    }
    return LBK_OK;
}

/* Balance: a local query's image along group g's split dimension. */
static uint32_t query_image(const decomposer *d, uint64_t q, int g)
{
    return lbk_toptree_order_image(
        d->in->queries[q * (uint64_t)d->in->dim + (uint64_t)d->split_dim[g]]);
}

/* Balance, one round: per group, points (first 256) and queries (next 256)
 * by the byte `round` of their image, among those whose image begins with
 * the group's prefix so far. */
static lbk_status balance_round(const lbk_comm *comm, decomposer *d, int round,
                                const uint32_t *prefix)
{
    const size_t per = 512;
    const int shift = 24 - 8 * round;
    memset(d->local, 0, (size_t)d->groups * per * sizeof *d->local);
    for (uint64_t i = 0; i < d->in->rows; i++) {
        const int s = d->slot[d->node_of[i]];
        const uint32_t img = s < 0 ? 0 : point_image(d, i, s);
        if (s >= 0 && (round == 0 || img >> (shift + 8) == prefix[s] >> (shift + 8)))
            d->local[(size_t)s * per + ((img >> shift) & 255u)]++;
    }
    for (uint64_t q = 0; q < d->in->query_rows; q++) {
        const int s = d->slot[d->qnode_of[q]];
        const uint32_t img = s < 0 ? 0 : query_image(d, q, s);
        if (s >= 0 && (round == 0 || img >> (shift + 8) == prefix[s] >> (shift + 8)))
            d->local[(size_t)s * per + 256 + ((img >> shift) & 255u)]++;
    }
    return lbk_comm_mpi_allreduce(comm, d->local, d->hist, (int)((size_t)d->groups * per),
                                  sizeof *d->hist, MPI_UINT64_T, MPI_SUM,
                                  "MPI_Allreduce (spatial load balance)");
}

/* Balance: each group's left count where the weight (points 1 each,
 * queries query_weight) splits as its ranks do, read from the images' top
 * byte down (four rounds); within the last image value the points are
 * shared out linearly. Clamped so that every rank keeps a point where the
 * group has one per rank. Only an estimate: any count is exact. */
static lbk_status balance_counts(const lbk_comm *comm, decomposer *d)
{
    const int groups = d->groups;
    uint32_t *prefix = calloc((size_t)groups, sizeof *prefix);
    double *target = calloc((size_t)groups, sizeof *target);
    double *before = calloc((size_t)groups, sizeof *before);
    uint64_t *left = calloc((size_t)groups, sizeof *left);
    lbk_status st = prefix && target && before && left ? LBK_OK : LBK_ERR_NOMEM;
    if (st != LBK_OK)
        lbk_error("out of host memory for the spatial load balance (%d groups)", groups);
    st = lbk_comm_agree(comm, st);
    for (int round = 0; st == LBK_OK && round < 4; round++) {
        st = balance_round(comm, d, round, prefix);
        for (int g = 0; st == LBK_OK && g < groups; g++) {
            const uint64_t *h = d->hist + (size_t)g * 512;
            const lbk_toptree_node *n = &d->tree->nodes[d->active[g]];
            if (round == 0) {
                double total = 0.0;
                for (int b = 0; b < 256; b++)
                    total += (double)h[b] + d->query_weight * (double)h[256 + b];
                target[g] = total * lbk_toptree_left_ranks(n->ranks) / n->ranks;
            }
            int pick = 255;
            for (int b = 0; b < 256; b++) {
                const double w = (double)h[b] + d->query_weight * (double)h[256 + b];
                if (before[g] + w > target[g]) {
                    pick = b;
                    break;
                }
                if (b < 255) {
                    before[g] += w;
                    left[g] += h[b];
                }
            }
            prefix[g] |= (uint32_t)pick << (24 - 8 * round);
            if (round == 3) {
                const double w = (double)h[pick] + d->query_weight * (double)h[256 + pick];
                double f = w > 0.0 ? (target[g] - before[g]) / w : 0.0;
                f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
                left[g] += (uint64_t)(f * (double)h[pick]);
            }
        }
    }
    for (int g = 0; st == LBK_OK && g < groups; g++) {
        lbk_toptree_node *n = &d->tree->nodes[d->active[g]];
        const uint64_t lr = (uint64_t)lbk_toptree_left_ranks(n->ranks);
        const uint64_t rr = (uint64_t)n->ranks - lr;
        uint64_t m = left[g];
        if (n->points >= (uint64_t)n->ranks)
            m = m < lr ? lr : m > n->points - rr ? n->points - rr : m;
        else
            m = lbk_toptree_left_points(n->points, n->ranks);
        d->tree->nodes[n->left].points = m;
        d->tree->nodes[n->right].points = n->points - m;
        d->want[g] = m;
    }
    free(prefix);
    free(target);
    free(before);
    free(left);
    return st;
}

/* Collective, balance: one query's weight, so that all of them together
 * weigh BALANCE_QUERY_SHARE of points and queries. */
static lbk_status balance_weight(const lbk_comm *comm, decomposer *d)
{
    uint64_t queries = d->in->query_rows;
    LBK_TRY(lbk_comm_mpi_allreduce(comm, MPI_IN_PLACE, &queries, 1, sizeof queries, MPI_UINT64_T,
                                   MPI_SUM, "MPI_Allreduce (spatial load balance: queries)"));
    d->query_weight = queries ? BALANCE_QUERY_SHARE / (1.0 - BALANCE_QUERY_SHARE) *
                                    (double)d->in->total_rows / (double)queries
                              : 0.0;
    return LBK_OK;
}

/* Collective: the planes of every group of this depth, and each point's
 * step down. */
static lbk_status split_level(const lbk_comm *comm, decomposer *d, int level)
{
    lbk_toptree *t = d->tree;
    d->groups = 0;
    for (int i = 0; i < t->count; i++) {
        const lbk_toptree_node *n = &t->nodes[i];
        d->slot[i] = -1;
        if (n->depth != level || n->ranks == 1 || n->points == 0)
            continue;
        d->slot[i] = d->groups;
        d->active[d->groups] = i;
        d->want[d->groups++] = t->nodes[n->left].points;
    }
    if (d->groups == 0)
        return LBK_OK; /* every rank sees the same shape */
    if (d->split == LBK_SPLIT_WIDEST)
        LBK_TRY(widest_dims(comm, d));
    else
        for (int g = 0; g < d->groups; g++)
            t->nodes[d->active[g]].dim = level % d->in->dim;
    for (int g = 0; g < d->groups; g++)
        d->split_dim[g] = t->nodes[d->active[g]].dim;
    if (d->in->balance)
        LBK_TRY(balance_counts(comm, d));
    d->pos = 0;
    d->matching = 0;
    bool done = false;
    for (int round = 0; !done; round++)
        LBK_TRY(select_round(comm, d, round, &done));
    for (uint64_t i = 0; i < d->in->rows; i++) {
        const int s = d->slot[d->node_of[i]];
        if (s < 0)
            continue;
        const lbk_toptree_node *n = &t->nodes[d->active[s]];
        /* Branch-free: on most data the side is a coin toss. */
        const uint32_t image = point_image(d, i, s);
        const uint64_t id = d->in->first_row + i;
        const int left = (image < n->image) | ((image == n->image) & (id < n->id));
        d->node_of[i] = n->right + left * (n->left - n->right);
    }
    /* A query on the plane goes right, as its home walk does. */
    for (uint64_t q = 0; d->in->balance && q < d->in->query_rows; q++) {
        const int s = d->slot[d->qnode_of[q]];
        if (s >= 0) {
            const lbk_toptree_node *n = &t->nodes[d->active[s]];
            d->qnode_of[q] = query_image(d, q, s) < n->image ? n->left : n->right;
        }
    }
    return LBK_OK;
}

enum { STREAM_POINTS, STREAM_IDS, STREAM_LABELS };

/* The points of `rank`'s leaf: what it owns once they have moved. */
static uint64_t leaf_points(const lbk_toptree *tree, int rank)
{
    for (int i = 0; i < tree->count; i++)
        if (tree->nodes[i].ranks == 1 && tree->nodes[i].first == rank)
            return tree->nodes[i].points;
    return 0;
}

/* Compact points packed by owner, typed by width as the float32 rows are. */
static void pack_compact(const decomposer *d, size_t row, uint64_t *cursor, unsigned char *pack)
{
    const lbk_decompose_shard *in = d->in;
    const size_t values = (size_t)in->dim;
    for (uint64_t i = 0; i < in->rows; i++) {
        unsigned char *at = pack + cursor[d->node_of[i]]++ * row;
        if (in->value_bytes == 2) {
            const uint16_t *p = (const uint16_t *)in->raw + i * values;
            for (size_t j = 0; j < values; j++)
                ((uint16_t *)(void *)at)[j] = p[j];
        } else {
            const unsigned char *p = (const unsigned char *)in->raw + i * values;
            for (size_t j = 0; j < values; j++)
                at[j] = p[j];
        }
    }
}

/* One stream's rows packed by owner, ascending row order within each. */
static void pack_stream(const decomposer *d, int which, size_t row, uint64_t *cursor,
                        unsigned char *pack)
{
    const lbk_decompose_shard *in = d->in;
    /* One loop per stream with typed stores: a memcpy call of `row` bytes
     * per point took most of the exchange's time. */
    const size_t dim = (size_t)in->dim;
    if (which == STREAM_POINTS && in->value_of) {
        pack_compact(d, row, cursor, pack);
    } else if (which == STREAM_POINTS) {
        for (uint64_t i = 0; i < in->rows; i++) {
            float *at = (float *)(void *)(pack + cursor[d->node_of[i]]++ * row);
            const float *p = in->points + i * dim;
            for (size_t j = 0; j < dim; j++)
                at[j] = p[j];
        }
    } else if (which == STREAM_IDS && d->id_size == sizeof(uint32_t)) {
        for (uint64_t i = 0; i < in->rows; i++)
            *(uint32_t *)(void *)(pack + cursor[d->node_of[i]]++ * row) =
                (uint32_t)(in->first_row + i);
    } else if (which == STREAM_IDS) {
        for (uint64_t i = 0; i < in->rows; i++)
            *(uint64_t *)(void *)(pack + cursor[d->node_of[i]]++ * row) = in->first_row + i;
    } else {
        for (uint64_t i = 0; i < in->rows; i++)
            *(int32_t *)(void *)(pack + cursor[d->node_of[i]]++ * row) = in->labels[i];
    }
}

/* Collective: one stream to the owners through `pack` (room for every
 * row of the widest stream); the received rows stay in `recv`. */
static lbk_status move_stream(const lbk_comm *comm, const decomposer *d, int which,
                              unsigned char *pack, const uint64_t *counts, uint64_t *cursor,
                              uint64_t *recv_counts, lbk_exchange_buffer *recv,
                              uint64_t *bytes_sent)
{
    const size_t row = which == STREAM_POINTS ? point_bytes(d->in)
                       : which == STREAM_IDS  ? d->id_size
                                              : sizeof(int32_t);
    uint64_t at = 0;
    for (int r = 0; r < comm->size; r++) {
        cursor[r] = at;
        at += counts[r];
    }
    pack_stream(d, which, row, cursor, pack);
    return lbk_exchange_rows(comm, LBK_OK, pack, counts, row, recv, recv_counts, bytes_sent);
}

/* Collective: the points, ids and labels to their owners. */
static lbk_status move_points(const lbk_comm *comm, decomposer *d, lbk_decompose_owned *out,
                              uint64_t *bytes_sent)
{
    const size_t p = (size_t)comm->size;
    uint64_t *counts = calloc(p, sizeof *counts), *cursor = malloc(p * sizeof *cursor);
    uint64_t *recv_counts = malloc(p * sizeof *recv_counts);
    /* One packing buffer for the three streams: each of its pages is
     * faulted in once (on this VM a fresh page costs more than the copy). */
    const size_t widest = point_bytes(d->in) > d->id_size ? point_bytes(d->in) : d->id_size;
    /* Whole 8-byte words: the streams are stored typed (8-byte ids too),
     * and guard mode ends the buffer where its size ends. */
    unsigned char *pack = lbk_alloc_large(((size_t)d->in->rows * widest + 7) / 8 * 8);
    lbk_exchange_buffer bufs[3] = {{0}};
    lbk_status st = counts && cursor && recv_counts && pack ? LBK_OK : LBK_ERR_NOMEM;
    if (st != LBK_OK)
        lbk_error("out of host memory for the spatial exchange (%zu ranks, %llu points)", p,
                  (unsigned long long)d->in->rows);
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    for (uint64_t i = 0; i < d->in->rows; i++) {
        d->node_of[i] = d->tree->nodes[d->node_of[i]].first;
        counts[d->node_of[i]]++;
    }
    const int streams = d->in->has_labels ? 3 : 2;
    /* The arrays this rank will own, on huge pages (alloc_large.h): as
     * many rows as its leaf of the top tree holds. */
    const uint64_t owned = leaf_points(d->tree, comm->rank);
    const size_t rows_bytes[3] = {point_bytes(d->in), d->id_size, sizeof(int32_t)};
    for (int s = 0; s < streams && st == LBK_OK; s++) {
        bufs[s].capacity = (size_t)owned * rows_bytes[s];
        bufs[s].data = lbk_alloc_large(bufs[s].capacity);
        if (!bufs[s].data) {
            lbk_error("out of host memory for this rank's %llu points",
                      (unsigned long long)owned);
            st = LBK_ERR_NOMEM;
        }
    }
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    for (int s = 0; s < streams; s++)
        LBK_TRY_GOTO(
            st, move_stream(comm, d, s, pack, counts, cursor, recv_counts, &bufs[s], bytes_sent));
    out->rows = 0;
    for (size_t r = 0; r < p; r++)
        out->rows += recv_counts[r];
    out->dim = d->in->dim;
    out->value_bytes = d->in->value_of ? d->in->value_bytes : sizeof(float);
    if (d->in->value_of)
        out->raw = bufs[STREAM_POINTS].data;
    else
        out->points = bufs[STREAM_POINTS].data;
    if (d->id_size == sizeof(uint32_t))
        out->ids32 = bufs[STREAM_IDS].data;
    else
        out->ids = bufs[STREAM_IDS].data;
    out->labels = d->in->has_labels ? bufs[STREAM_LABELS].data : NULL;
    memset(bufs, 0, sizeof bufs);
cleanup:
    for (int s = 0; s < 3; s++)
        lbk_exchange_buffer_free(&bufs[s]);
    lbk_alloc_large_free(pack);
    free(counts);
    free(cursor);
    free(recv_counts);
    return st;
}

/* The invariant the exact merge rests on: sources hold ascending id
 * ranges and send ascending ids, so this rank's points are in ascending id
 * order and the engine's (key, local index) order is (key, id) order. */
static lbk_status check_owned(const lbk_comm *comm, const lbk_toptree *tree,
                              const lbk_decompose_owned *own)
{
    LBK_FAIL_IF(leaf_points(tree, comm->rank) != own->rows, LBK_ERR_INTERNAL,
                "internal: spatial decomposition gave this rank %llu points, not %llu",
                (unsigned long long)own->rows, (unsigned long long)leaf_points(tree, comm->rank));
    for (uint64_t i = 1; i < own->rows; i++)
        LBK_FAIL_IF(lbk_decompose_owned_id(own, i - 1) >= lbk_decompose_owned_id(own, i),
                    LBK_ERR_INTERNAL, "internal: owned points out of id order (%llu then %llu)",
                    (unsigned long long)lbk_decompose_owned_id(own, i - 1),
                    (unsigned long long)lbk_decompose_owned_id(own, i));
    return LBK_OK;
}

/* Collective: every rank's count and tight box, to every rank. */
static lbk_status gather_boxes(const lbk_comm *comm, lbk_toptree *tree,
                               const lbk_decompose_owned *own, lbk_decompose_value_fn value_of)
{
    const int dim = own->dim;
    const size_t floats = 2 * (size_t)dim, rec = sizeof(uint64_t) + floats * sizeof(float);
    unsigned char *mine = malloc(rec), *all = malloc(rec * (size_t)comm->size);
    float *box = malloc(floats * sizeof *box);
    lbk_status st = mine && all && box ? LBK_OK : LBK_ERR_NOMEM;
    if (st != LBK_OK)
        lbk_error("out of host memory for the ranks' boxes (%d ranks)", comm->size);
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    for (int j = 0; j < dim; j++) {
        box[j] = INFINITY;
        box[dim + j] = -INFINITY;
    }
    for (uint64_t i = 0; i < own->rows; i++)
        for (int j = 0; j < dim; j++) {
            const uint64_t at = i * (uint64_t)dim + (uint64_t)j;
            const float v = value_of ? value_of(own->raw, at) : own->points[at];
            box[j] = v < box[j] ? v : box[j];
            box[dim + j] = v > box[dim + j] ? v : box[dim + j];
        }
    memcpy(mine, &own->rows, sizeof own->rows);
    memcpy(mine + sizeof own->rows, box, floats * sizeof *box);
    LBK_TRY_GOTO(st, lbk_comm_allgather_bytes(comm, mine, all, (int)rec));
    for (int r = 0; r < comm->size; r++) {
        const unsigned char *at = all + (size_t)r * rec;
        memcpy(&tree->owned[r], at, sizeof *tree->owned);
        memcpy(box, at + sizeof *tree->owned, floats * sizeof *box);
        memcpy(tree->lo + (size_t)r * (size_t)dim, box, (size_t)dim * sizeof *box);
        memcpy(tree->hi + (size_t)r * (size_t)dim, box + dim, (size_t)dim * sizeof *box);
    }
    lbk_toptree_set_node_boxes(tree);
cleanup:
    free(mine);
    free(all);
    free(box);
    return st;
}

void lbk_decompose_owned_free(lbk_decompose_owned *points)
{
    lbk_alloc_large_free(points->points);
    lbk_alloc_large_free(points->raw);
    lbk_alloc_large_free(points->ids);
    lbk_alloc_large_free(points->ids32);
    lbk_alloc_large_free(points->labels);
    memset(points, 0, sizeof *points);
}

lbk_status lbk_decompose(const lbk_comm *comm, lbk_tree_split split,
                         const lbk_decompose_shard *shard, lbk_toptree *tree,
                         lbk_decompose_owned *out, uint64_t *bytes_sent)
{
    decomposer d;
    memset(&d, 0, sizeof d);
    memset(out, 0, sizeof *out);
    lbk_status st = lbk_toptree_shape(tree, comm->size, shard->dim, shard->total_rows);
    if (st == LBK_OK)
        st = decomposer_alloc(&d, shard, tree, split);
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    if (shard->balance)
        LBK_TRY_GOTO(st, balance_weight(comm, &d));
    const int levels = lbk_toptree_levels(tree);
    for (int level = 0; level < levels; level++)
        LBK_TRY_GOTO(st, split_level(comm, &d, level));
    LBK_TRY_GOTO(st, move_points(comm, &d, out, bytes_sent));
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, check_owned(comm, tree, out)));
    st = gather_boxes(comm, tree, out, shard->value_of);
cleanup:
    decomposer_free(&d);
    if (st != LBK_OK) {
        lbk_toptree_free(tree);
        lbk_decompose_owned_free(out);
    }
    return st;
}
