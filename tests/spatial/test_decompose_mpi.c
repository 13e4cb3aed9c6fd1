/* The spatial decomposition under mpirun -n P (src/comm/decompose.h): every
 * rank builds its row shard of a data set that is a pure function of the
 * row, decomposes, and checks what it got: the same top tree as every other
 * rank, its leaf's exact point count, points that the planes place on it
 * (so each plane splits its group at exactly the proportional count, ties
 * broken by id), ascending ids, rows equal to the input's, a tight box, and
 * every id owned exactly once over all ranks. Balanced cases (mpi.balance:
 * queries) pass queries crowded into one corner: the same checks hold at
 * the counts the weights chose, and on spread points the queries' home
 * ranks share them to within 1.5 x the mean (with points enough to put
 * planes between them). */
#include "collective.h"
#include "decompose.h"
#include "lbk_test.h"
#include "lbk_test_mpi.h"
#include "toptree.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM 3

static lbk_comm comm;

typedef enum { UNIFORM, GRID, SAME, CLUSTERED } data_kind;

typedef struct {
    const char *name;
    data_kind kind;
    uint64_t n;
    lbk_tree_split split;
    int chunked; /* exchanges in rounds of a few rows */
    int labels;
    int wide_ids; /* 64-bit ids (what more than 2^32 points would get) */
    int balance;  /* queries in one corner balance the planes */
} decompose_case;

/* Row `id` of the data set: any rank can make any row. */
static void make_row(data_kind kind, uint64_t id, float *p, int32_t *label)
{
    uint64_t h = lbk_test_mix64(id + 1);
    *label = (int32_t)(h % 7);
    for (int j = 0; j < DIM; j++) {
        h = lbk_test_mix64(h + (uint64_t)j);
        const float u = (float)(h >> 40) / (float)(1 << 24);
        switch (kind) {
        case UNIFORM: p[j] = u * 2.0f - 1.0f; break;
        case GRID: p[j] = (float)(h % 4); break;  /* 64 distinct points */
        case SAME: p[j] = (float)j + 0.5f; break; /* all one point */
        case CLUSTERED: p[j] = (float)(id % 3) * 100.0f + u * 1e-3f; break;
        }
    }
}

typedef struct {
    float *points;
    int32_t *labels;
    uint64_t first, rows;
    float *queries; /* balance: this rank's, qrows of them */
    uint64_t qrows;
} shard;

#define QUERIES 600

/* Query `q` of a balanced case: the points' own rows, squeezed into the
 * corner [lo, lo + 1/8 of the spread) of every dimension. */
static void make_query(data_kind kind, uint64_t q, float *p)
{
    int32_t label;
    make_row(kind, q * 7 + 3, p, &label);
    for (int j = 0; j < DIM; j++)
        p[j] = kind == UNIFORM ? -1.0f + (p[j] + 1.0f) / 2.0f : p[j];
}

static int make_shard(const decompose_case *c, shard *s)
{
    const uint64_t p = (uint64_t)comm.size, r = (uint64_t)comm.rank;
    s->first = c->n * r / p;
    s->rows = c->n * (r + 1) / p - s->first;
    s->points = malloc((size_t)(s->rows + 1) * DIM * sizeof *s->points);
    s->labels = malloc((size_t)(s->rows + 1) * sizeof *s->labels);
    if (!LBK_EXPECT_TRUE(s->points && s->labels, "out of memory"))
        return 0;
    for (uint64_t i = 0; i < s->rows; i++)
        make_row(c->kind, s->first + i, s->points + i * DIM, s->labels + i);
    if (!c->balance)
        return 1;
    const uint64_t qfirst = QUERIES * r / p;
    s->qrows = QUERIES * (r + 1) / p - qfirst;
    s->queries = malloc((size_t)(s->qrows + 1) * DIM * sizeof *s->queries);
    if (!LBK_EXPECT_TRUE(s->queries != NULL, "out of memory"))
        return 0;
    for (uint64_t q = 0; q < s->qrows; q++)
        make_query(c->kind, qfirst + q, s->queries + q * DIM);
    return 1;
}

/* Balanced on spread points: every rank is the home of about its share
 * of the queries (each rank counts its own slice's homes, summed). */
static void check_balance(const decompose_case *c, const lbk_toptree *t, const shard *s)
{
    if (!c->balance || c->kind != UNIFORM || c->n < 100 || comm.size < 2)
        return;
    uint64_t *homes = calloc((size_t)comm.size, sizeof *homes);
    if (!LBK_EXPECT_TRUE(homes != NULL, "out of memory"))
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (uint64_t q = 0; q < s->qrows; q++)
        homes[lbk_toptree_home(t, s->queries + q * DIM)]++;
    MPI_Allreduce(MPI_IN_PLACE, homes, comm.size, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    uint64_t most = 0;
    for (int r = 0; r < comm.size; r++)
        most = homes[r] > most ? homes[r] : most;
    LBK_EXPECT_TRUE((double)most <= 1.5 * QUERIES / comm.size,
                    "the busiest rank is home to %llu of %d queries on %d ranks",
                    (unsigned long long)most, QUERIES, comm.size);
    free(homes);
}

/* The tree's planes, counts and boxes, as bytes any rank can compare. */
static uint64_t tree_hash(const lbk_toptree *t)
{
    uint64_t h = 0;
    for (int i = 0; i < t->count; i++) {
        const lbk_toptree_node *n = &t->nodes[i];
        h = lbk_test_mix64(h ^ (uint64_t)n->dim ^ ((uint64_t)n->image << 8) ^ (n->id << 40) ^
                           n->points);
    }
    for (int r = 0; r < t->ranks; r++) {
        h = lbk_test_mix64(h ^ t->owned[r]);
        for (int j = 0; j < DIM; j++) {
            uint32_t lo, hi;
            memcpy(&lo, &t->lo[r * DIM + j], 4);
            memcpy(&hi, &t->hi[r * DIM + j], 4);
            h = lbk_test_mix64(h ^ lo ^ ((uint64_t)hi << 32));
        }
    }
    return h;
}

/* This rank's points: its leaf's count, ascending ids, the input's rows,
 * placed here by the planes, inside a tight box. */
static void check_owned(const decompose_case *c, const lbk_toptree *t,
                        const lbk_decompose_owned *o)
{
    LBK_EXPECT_EQ_U64(o->rows, t->owned[comm.rank]);
    for (int i = 0; i < t->count; i++)
        if (t->nodes[i].ranks == 1 && t->nodes[i].first == comm.rank)
            LBK_EXPECT_EQ_U64(o->rows, t->nodes[i].points, "the leaf's count");
    float lo[DIM], hi[DIM];
    for (int j = 0; j < DIM; j++) {
        lo[j] = INFINITY;
        hi[j] = -INFINITY;
    }
    for (uint64_t i = 0; i < o->rows; i++) {
        float want[DIM];
        int32_t label;
        const float *p = o->points + i * DIM;
        make_row(c->kind, lbk_decompose_owned_id(o, i), want, &label);
        const unsigned long long id = lbk_decompose_owned_id(o, i);
        if (!LBK_EXPECT_EQ_MEM(p, want, sizeof want, "row of id %llu", id) ||
            (i > 0 && !LBK_EXPECT_U64(lbk_decompose_owned_id(o, i - 1), <,
                                      lbk_decompose_owned_id(o, i), "ascending ids")) ||
            !LBK_EXPECT_EQ_INT(lbk_toptree_owner(t, p, lbk_decompose_owned_id(o, i)), comm.rank,
                               "id %llu", id))
            return;
        if (c->labels)
            LBK_EXPECT_EQ_INT(o->labels[i], label);
        for (int j = 0; j < DIM; j++) {
            lo[j] = p[j] < lo[j] ? p[j] : lo[j];
            hi[j] = p[j] > hi[j] ? p[j] : hi[j];
        }
    }
    LBK_EXPECT_EQ_MEM(lo, &t->lo[comm.rank * DIM], sizeof lo, "box low corner");
    LBK_EXPECT_EQ_MEM(hi, &t->hi[comm.rank * DIM], sizeof hi, "box high corner");
    LBK_EXPECT_TRUE(c->labels ? o->labels != NULL : o->labels == NULL, "labels");
}

/* Over every rank: the same tree, and every id exactly once. */
static void check_global(const decompose_case *c, const lbk_toptree *t,
                         const lbk_decompose_owned *o)
{
    uint64_t h = tree_hash(t), lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    LBK_EXPECT_EQ_U64(lo, hi, "every rank has the same top tree");
    int *seen = calloc((size_t)c->n + 1, sizeof *seen);
    if (!LBK_EXPECT_TRUE(seen != NULL, "out of memory"))
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (uint64_t i = 0; i < o->rows; i++)
        if (lbk_decompose_owned_id(o, i) < c->n)
            seen[lbk_decompose_owned_id(o, i)]++;
    MPI_Allreduce(MPI_IN_PLACE, seen, (int)c->n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (uint64_t id = 0; id < c->n; id++)
        if (!LBK_EXPECT_EQ_INT(seen[id], 1, "id %llu owned once", (unsigned long long)id))
            break;
    free(seen);
}

static void run_case(const void *row)
{
    const decompose_case *c = row;
    shard s = {0};
    if (!make_shard(c, &s))
        MPI_Abort(MPI_COMM_WORLD, 1);
    lbk_comm_set_chunk_bytes(c->chunked ? 64 : 0);
    const lbk_decompose_shard view = {.rows = s.rows,
                                      .first_row = s.first,
                                      .total_rows = c->n,
                                      .dim = DIM,
                                      .points = s.points,
                                      .labels = c->labels ? s.labels : NULL,
                                      .has_labels = c->labels != 0,
                                      .wide_ids = c->wide_ids != 0,
                                      .balance = c->balance != 0,
                                      .queries = s.queries,
                                      .query_rows = s.qrows};
    lbk_toptree tree;
    lbk_decompose_owned own;
    uint64_t bytes = 0;
    const lbk_status st = lbk_decompose(&comm, c->split, &view, &tree, &own, &bytes);
    lbk_comm_set_chunk_bytes(0);
    if (LBK_EXPECT_EQ_INT(st, LBK_OK, "%s", lbk_status_name(st))) {
        if (own.rows > 0)
            LBK_EXPECT_TRUE(c->wide_ids ? own.ids && !own.ids32 : own.ids32 && !own.ids,
                            "ids of %d bits", c->wide_ids ? 64 : 32);
        check_owned(c, &tree, &own);
        check_global(c, &tree, &own);
        check_balance(c, &tree, &s);
        lbk_toptree_free(&tree);
        lbk_decompose_owned_free(&own);
    }
    free(s.points);
    free(s.labels);
    free(s.queries);
}

/* N below P (empty ranks), N = 1, ties on every plane, one repeated point,
 * far-apart clusters, no labels, and the exchange cut into rounds. */
static const decompose_case rows[] = {
    {"uniform_rr", UNIFORM, 1000, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 0},
    {"uniform_widest", UNIFORM, 1000, LBK_SPLIT_WIDEST, 0, 1, 0, 0},
    {"grid_rr", GRID, 700, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 0},
    {"grid_widest", GRID, 700, LBK_SPLIT_WIDEST, 0, 1, 0, 0},
    {"same_rr", SAME, 300, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 0},
    {"same_widest", SAME, 300, LBK_SPLIT_WIDEST, 0, 1, 0, 0},
    {"clustered_widest", CLUSTERED, 900, LBK_SPLIT_WIDEST, 0, 1, 0, 0},
    {"fewer_points_than_ranks", UNIFORM, 3, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 0},
    {"one_point", GRID, 1, LBK_SPLIT_WIDEST, 0, 1, 0, 0},
    {"no_labels", UNIFORM, 500, LBK_SPLIT_ROUND_ROBIN, 0, 0, 0, 0},
    {"chunked", GRID, 400, LBK_SPLIT_WIDEST, 1, 1, 0, 0},
    {"wide_ids", UNIFORM, 1000, LBK_SPLIT_WIDEST, 0, 1, 1, 0},
    {"balanced_rr", UNIFORM, 1000, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 1},
    {"balanced_widest", UNIFORM, 1000, LBK_SPLIT_WIDEST, 0, 1, 0, 1},
    {"balanced_grid", GRID, 700, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 1},
    {"balanced_clustered", CLUSTERED, 900, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 1},
    {"balanced_few_points", UNIFORM, 3, LBK_SPLIT_ROUND_ROBIN, 0, 1, 0, 1},
};

int main(int argc, char **argv)
{
    const lbk_test_table table[] = {LBK_TEST_ROWS(rows, run_case)};
    return lbk_test_mpi_main(argc, argv, table, 1, &comm);
}
