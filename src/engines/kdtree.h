/* Left-balanced k-d tree built on the device with Wald's tag-sort algorithm
 * (arXiv 2211.00120): one uint32 tag per point, D sorts and D-1 update
 * passes. The tree is the permuted point array itself: node i at slot i,
 * children 2i+1 and 2i+2. */
#ifndef LBK_KDTREE_H
#define LBK_KDTREE_H

#include "dataset.h"
#include "device.h"
#include "enums.h"
#include "status.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lbk_kdtree lbk_kdtree;

/* Compact points (uint8, int8, float16) are held at their own width and
 * walked in float32 arithmetic on their exact float values. For uint8 and
 * int8 (|q - r| <= 255 for queries in the points' range) every l2 partial
 * sum is an integer of at most dim * 255^2, exact in float32 while below
 * 2^24: 258 * 255^2 = 16,776,450 is, 259 * 255^2 is not. Up to this
 * dimension the tree's keys are the brute engine's exact integer keys
 * (l1 and linf are exact further out; one limit keeps the rule simple);
 * beyond it the index widens the points and the engine refuses them. */
#define LBK_KDTREE_INT_DIM_MAX 258

typedef struct {
    lbk_tree_split split;
    /* Round robin: level l splits dimension (rotation + l) mod dim, so a
     * tree under a partition's top levels can continue their rotation
     * instead of starting at 0 again (the spatial partition: docs/design.md
     * section 9). */
    int rotation;
    lbk_tree_sort sort;     /* AUTO = radix unless the memory budget forbids it */
    bool verify;            /* run lbk_kdtree_check after the build */
    uint64_t memory_budget; /* bytes; 0 = from the device */
    bool profile;           /* time every kernel and level's sort, print to stderr
                                  (serialises the build; benchmarks) */
    /* Radix sort: levels whose runs (one subtree's points) hold at most
     * segment_max points are sorted one run per work-item, longer ones by the
     * global sort; 0 = the global sort for every level but the last. Unless
     * segment_max_set, 2^segment_log2 of the tuning. */
    bool segment_max_set;
    uint64_t segment_max;
    const lbk_tuning *tuning; /* NULL = derived from the device */
} lbk_kdtree_params;

typedef struct {
    double build_s;
    uint64_t peak_device_bytes;
    lbk_tree_sort sort_used;
    int levels;
    /* Global-memory bytes the build's kernels read and wrote, counted from
     * their access patterns (not measured): for the bytes-per-point-per-level
     * benchmark. */
    uint64_t bytes_moved;
} lbk_kdtree_stats;

/* An empty shard gives an empty tree (queries return pads). */
lbk_status lbk_kdtree_build(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_kdtree_params *params, lbk_kdtree **out);
void lbk_kdtree_get_stats(const lbk_kdtree *tree, lbk_kdtree_stats *stats);

/* Lays out the query's copy of the bottom levels (src/engines/tree_buckets.h)
 * once; lbk_tree_query does it on its first call if nobody did. The device
 * bytes are already in the tree's. */
lbk_status lbk_kdtree_prepare_query(lbk_kdtree *tree);

/* Copy the built tree back: points in tree order (n * dim, float32: compact
 * points widened, exactly), the original
 * shard row of each node, and (widest split) each node's split dimension
 * (NULL when round-robin). Arrays are allocated by the callee, freed by the
 * caller with free(). */
lbk_status lbk_kdtree_download(const lbk_kdtree *tree, float **points, uint32_t **ids,
                               uint8_t **split_dims);
/* The same with the points at the tree's own type (lbk_kdtree_dtype), as
 * a saved index stores them. */
lbk_status lbk_kdtree_download_raw(const lbk_kdtree *tree, void **points, uint32_t **ids,
                                   uint8_t **split_dims);

/* A built tree as host arrays (lbk_kdtree_download_raw's, and the sort that
 * built it), as a saved index keeps it. */
typedef struct {
    uint64_t n;
    int dim;
    lbk_dtype dtype;     /* the points' type (compact types stay compact) */
    void *points;        /* n * dim of dtype, tree order */
    uint32_t *ids;       /* n: the shard row of each node */
    uint8_t *split_dims; /* n, or NULL: round robin */
    int rotation;        /* round robin: the root's dimension (not saved: the
                            spatial partition derives it from its top tree) */
    lbk_tree_sort sort_used;
} lbk_kdtree_image;

/* The tree of a saved image, without building: its buffers are copies of
 * the image's arrays (borrowed), so queries give what the built tree gave. */
lbk_status lbk_kdtree_upload(lbk_device *dev, const lbk_kdtree_image *image, lbk_kdtree **out);

/* Host-side check of the k-d invariant on a downloaded tree: every node
 * against the bounds of its whole subtree. split_dims NULL = round robin
 * from dimension `rotation`. Returns LBK_ERR_INTERNAL (logged, naming the
 * node) when it does not hold. */
lbk_status lbk_kdtree_check(const float *points, uint64_t n, int dim, const uint8_t *split_dims,
                            int rotation);
/* Round robin: the dimension of the root. */
int lbk_kdtree_rotation(const lbk_kdtree *tree);
/* The type the tree holds its points in: the built shard's, or the
 * uploaded image's (compact types stay compact, docs/design.md "Compact
 * reference points"). */
lbk_dtype lbk_kdtree_dtype(const lbk_kdtree *tree);

void lbk_kdtree_destroy(lbk_kdtree *tree);

/* The tree query's device and host buffers, kept with the tree from one
 * call to the next (src/engines/tree_query.c makes, grows and frees them):
 * allocating them per call cost every batch its page faults. */
typedef struct lbk_kdtree_query_buffers lbk_kdtree_query_buffers;
lbk_kdtree_query_buffers **lbk_kdtree_query_buffers_slot(lbk_kdtree *tree);

/* The shape formulas of a left-balanced tree of n nodes (lbk_shared.h's
 * lbk_kd_*, shared with the kernels; docs/design.md section 4), with 64-bit
 * intermediates: levels D = bit length of n (0 for n = 0), the size of node
 * s's subtree, the first array position of s's subtree while its level is
 * being split, and s's pivot position. */
int lbk_kdtree_levels(uint64_t n);
uint64_t lbk_kdtree_subtree_size(uint64_t s, uint64_t n);
uint64_t lbk_kdtree_segment_begin(uint64_t s, uint64_t n);
uint64_t lbk_kdtree_pivot(uint64_t s, uint64_t n);

/* Peak device bytes a build of n points would allocate with this sort
 * (BITONIC or RADIX). */
uint64_t lbk_kdtree_build_bytes(uint64_t n, int dim, lbk_tree_split split, lbk_tree_sort sort);

#endif
