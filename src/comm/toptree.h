/* The spatial partition's top tree: a global k-d split of the reference
 * points into one box per rank, replicated on every rank. Pure functions
 * (no MPI): its shape, the strict order that places every point, the walk
 * that finds a query's home rank, and the box key that decides which ranks
 * a query must visit. decompose.h fills the planes and the boxes.
 *
 * A node is a group of ranks [first, first + ranks) holding `points` points.
 * A group of p > 1 ranks gives its left child ceil(p/2) ranks and
 * floor(n * ceil(p/2) / p) of its n points, its right child the rest, so
 * every rank ends up with floor or ceil of its proportional share and P need
 * not be a power of two. The left child holds exactly the points that come
 * before the plane's key in the order (coordinate image, global id), which
 * is strict even when many points share a coordinate. */
#ifndef LBK_TOPTREE_H
#define LBK_TOPTREE_H

#include "enums.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int first, ranks; /* the rank group [first, first + ranks) */
    uint64_t points;  /* points in the group, over all ranks */
    int depth;        /* root 0 */
    int left, right;  /* child nodes; -1 for a leaf (ranks == 1) */
    /* The plane of an inner node: split dimension, and the key of the first
     * point of the right child (the left child's point count-th point in
     * the order). Unset (dim 0, key 0) while points == 0. */
    int dim;
    uint32_t image;
    uint64_t id;
} lbk_toptree_node;

typedef struct {
    int ranks, dim;
    int count; /* nodes: 2 * ranks - 1, parents before children */
    lbk_toptree_node *nodes;
    /* After the redistribution: each rank's point count and the tight box
     * of its points (ranks * dim each; an empty rank has lo = +inf,
     * hi = -inf and is never visited). */
    uint64_t *owned;
    float *lo, *hi;
    /* Each node's box: the smallest box holding its ranks' boxes
     * (count * dim each), for pruning whole groups at once. */
    float *node_lo, *node_hi;
} lbk_toptree;

/* The shape for `ranks` ranks, `points` points in `dim` dimensions: every
 * node's group and point count; the planes and boxes are left unset. */
lbk_status lbk_toptree_shape(lbk_toptree *tree, int ranks, int dim, uint64_t points);
void lbk_toptree_free(lbk_toptree *tree);

/* Depth of the deepest inner node + 1: the number of split levels. */
int lbk_toptree_levels(const lbk_toptree *tree);
/* The depth of `rank`'s leaf: how many planes bound its cell from above. */
int lbk_toptree_leaf_depth(const lbk_toptree *tree, int rank);

/* Ranks and points of a group's left child. */
int lbk_toptree_left_ranks(int ranks);
uint64_t lbk_toptree_left_points(uint64_t points, int ranks);

/* The order-preserving image of a float: a < b (as floats) implies
 * image(a) < image(b); -0.0 sorts just below +0.0. No NaN reaches it (inputs
 * are checked). lbk_toptree_order_float is its inverse. */
static inline uint32_t lbk_toptree_order_image(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}
float lbk_toptree_order_float(uint32_t image);

/* True when the point (coordinate image, id) belongs to the node's left
 * child: (image, id) < (node->image, node->id). */
static inline bool lbk_toptree_goes_left(const lbk_toptree_node *node, uint32_t image,
                                         uint64_t id)
{
    return image < node->image || (image == node->image && id < node->id);
}

/* The rank that owns a reference point, by its key (planes must be set). */
int lbk_toptree_owner(const lbk_toptree *tree, const float *point, uint64_t id);

/* A query's home rank: the leaf whose cell contains it, walking the planes
 * with float compares (equal coordinates go right, where the plane's own
 * point is), never into a child without points. Any rank would be exact;
 * this one is usually the one that holds the neighbours. */
int lbk_toptree_home(const lbk_toptree *tree, const float *query);

/* A lower bound of the metric key (knn.h) of `query` to every point of the
 * box [lo, hi]: the key of the gap d_j = max(lo_j - q_j, q_j - hi_j, 0),
 * summed in the engines' order with the product rounded on its own. Every
 * step is a monotone rounding of a value no larger than the engine's, so
 * the result never exceeds any point's key, and terms below FLT_MIN count as
 * 0 so that a device that flushes subnormals keeps that property
 * (docs/design.md, "Spatial partition"). */
float lbk_toptree_box_key(const float *query, const float *lo, const float *hi, int dim,
                          lbk_metric metric);

/* Once owned, lo and hi are set: every node's box from its ranks' boxes. */
void lbk_toptree_set_node_boxes(lbk_toptree *tree);

/* The ranks other than `skip` that hold points and whose box key to
 * `query` is at most `bound` (inclusive, so that a tie with the bound
 * survives), in ascending rank order, into out (room for ranks entries);
 * returns how many. Groups whose node box is beyond the bound are skipped
 * whole: a node's box holds its ranks' boxes, so its key is no larger. */
int lbk_toptree_near(const lbk_toptree *tree, const float *query, float bound, lbk_metric metric,
                     int skip, int *out);

#endif
