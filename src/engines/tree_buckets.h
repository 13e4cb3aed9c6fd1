/* The tree query's copy of the bottom LBK_TREE_BUCKET_LEVELS levels of a
 * built k-d tree: one bucket per subtree rooted on the bucket level, its
 * nodes as vector lanes in one or two tiles (kernels/tree_query.cl,
 * tq_bucket_layout). The walk above the bucket level reads the tree itself. */
#ifndef LBK_TREE_BUCKETS_H
#define LBK_TREE_BUCKETS_H

#include "device_cl.h"
#include "enums.h"
#include "status.h"

#include <stdint.h>

typedef struct {
    cl_mem points; /* [tile][dim][lane] */
    cl_mem ids;    /* [tile][lane], LBK_NO_INDEX where no node */
    cl_uint level; /* the bucket roots' level */
    cl_ulong two_tile_buckets;
} lbk_tree_buckets;

/* Device bytes of the copy for n nodes of dim coordinates of `type`
 * (float32, uint8, int8, float16): at most 16/15 of the points and ids
 * when the last level is full, 8/7 when it is empty. */
uint64_t lbk_tree_buckets_bytes(uint64_t n, int dim, lbk_dtype type);

/* The build options of kernels/tree_query.cl for points of `type` (the
 * walk, the buckets and the build's widen and narrow kernels). */
const char *lbk_tree_buckets_program_options(lbk_dtype type);

/* Lays out the copy from the tree's points (of `type`) and ids (n > 0). */
lbk_status lbk_tree_buckets_make(lbk_device *dev, cl_mem points, cl_mem ids, uint64_t n, int dim,
                                 lbk_dtype type, lbk_tree_buckets *out);
void lbk_tree_buckets_release(lbk_tree_buckets *buckets);

#endif
