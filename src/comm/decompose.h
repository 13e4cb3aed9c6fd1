/* The spatial partition's decomposition: the reference points move from
 * row shards to the ranks that own their part of space.
 *
 * Collective. The top tree's planes are chosen level by level: each plane
 * is the exact point of its group at the left child's count in the strict
 * order (coordinate image, global id) along the split dimension, found by a
 * radix select whose every round is one MPI_Allreduce of one digit's
 * counts per group of the level (the first digit up to 16 bits wide, then
 * bytes); the rounds depend on P and the key width, not on N.
 * Every rank computes the same planes from the same sums. With queries
 * (mpi.balance: queries) the left child's count is not the proportional
 * one but where a weight of points and queries splits in proportion
 * (decompose.c, balance_counts), from four more rounds of counts per
 * level; any count keeps the results exact. The points then
 * move to their owners in three exchanges (coordinates, ids, labels), and
 * every rank learns every rank's point count and tight box. */
#ifndef LBK_DECOMPOSE_H
#define LBK_DECOMPOSE_H

#include "comm.h"
#include "enums.h"
#include "status.h"
#include "toptree.h"

#include <stdbool.h>
#include <stdint.h>

/* A compact point value (the index's uint8, int8 or float16 rows) as a
 * float, exactly: value `at` of the row-major array `raw`. */
typedef float (*lbk_decompose_value_fn)(const void *raw, uint64_t at);

/* Points with their global ids; labels may be NULL. */
typedef struct {
    uint64_t rows;
    int dim;
    float *points;      /* rows * dim; NULL when the rows are compact (raw) */
    void *raw;          /* rows * dim values of value_bytes each (compact), or NULL */
    size_t value_bytes; /* 4 for float32 points */
    uint64_t *ids;      /* rows; NULL when ids32 holds them */
    uint32_t *ids32;    /* rows, when every global id fits 32 bits: at 1e7 points on
                          2 ranks, 19 MiB less per rank through the build */
    int32_t *labels;    /* rows, or NULL */
} lbk_decompose_owned;

static inline uint64_t lbk_decompose_owned_id(const lbk_decompose_owned *points, uint64_t i)
{
    return points->ids32 ? points->ids32[i] : points->ids[i];
}

/* This rank's row shard: rows [first_row, first_row + rows) of the input,
 * the shards in rank order. has_labels must be the same on every rank (an
 * empty shard may still have labels == NULL). */
typedef struct {
    uint64_t rows, first_row, total_rows;
    int dim;
    const float *points;
    /* Compact rows instead of points where value_of is set (the same on
     * every rank; NULL: float32): value_bytes wide, read as floats through
     * value_of (exact), so the planes and boxes are the widened rows'; they
     * move at their own width. */
    const void *raw;
    size_t value_bytes;
    lbk_decompose_value_fn value_of;
    const int32_t *labels;
    bool has_labels;
    bool wide_ids; /* 64-bit ids even where 32 bits would hold them (tests) */
    /* mpi.balance: queries (the same on every rank): this rank's queries
     * (query_rows x dim), where the query phase's work will be. Without it
     * each group's points are split in proportion to its ranks. */
    bool balance;
    const float *queries;
    uint64_t query_rows;
} lbk_decompose_shard;

/* split: the top tree's dimension rule (round robin: depth mod dim;
 * widest: the widest side of the group's bounding box, ties to the highest
 * dimension). On success `tree` holds the planes and every rank's box and
 * count (the same on every rank), and `out` this rank's points in
 * ascending id order (the caller frees them with lbk_decompose_owned_free).
 * *bytes_sent: bytes this rank sent to other ranks. */
lbk_status lbk_decompose(const lbk_comm *comm, lbk_tree_split split,
                         const lbk_decompose_shard *shard, lbk_toptree *tree,
                         lbk_decompose_owned *out, uint64_t *bytes_sent);

void lbk_decompose_owned_free(lbk_decompose_owned *points);

#endif
