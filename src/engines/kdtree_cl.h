/* OpenCL-level access to a built k-d tree, for the tree query engine. Kept out
 * of kdtree.h so that modules without OpenCL types can use the tree. */
#ifndef LBK_KDTREE_CL_H
#define LBK_KDTREE_CL_H

#include "device_cl.h"
#include "kdtree.h"
#include "tree_buckets.h"

#include <stdint.h>

lbk_device *lbk_kdtree_device(const lbk_kdtree *tree);
uint64_t lbk_kdtree_size(const lbk_kdtree *tree);
int lbk_kdtree_dim(const lbk_kdtree *tree);
/* Points in tree order (size * dim floats), the original shard row of each
 * node, and each node's split dimension (NULL for round robin). NULL buffers
 * for an empty tree. */
cl_mem lbk_kdtree_points(const lbk_kdtree *tree);
cl_mem lbk_kdtree_ids(const lbk_kdtree *tree);
cl_mem lbk_kdtree_split_dims(const lbk_kdtree *tree);
/* Device bytes the built tree holds, the query's buckets included. */
uint64_t lbk_kdtree_bytes(const lbk_kdtree *tree);
/* The query's copy of the bottom levels, once lbk_kdtree_prepare_query has
 * laid it out (empty for an empty tree). */
const lbk_tree_buckets *lbk_kdtree_buckets(const lbk_kdtree *tree);

#endif
