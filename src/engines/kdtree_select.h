/* Private to the k-d tree builder: the select builder
 * (kernels/kdtree_select.cl), a selection per node instead of a sort per
 * level, for CPU devices and the round-robin split. It builds the same
 * tree as the tag sorts, node for node (the argument is in the kernel
 * file). The top levels, whose nodes are few and large, run one work-item
 * per node and level; from the first level whose subtrees hold at most
 * segment_max points, one work-item builds a whole subtree, depth first,
 * in its core's cache. */
#ifndef LBK_KDTREE_SELECT_H
#define LBK_KDTREE_SELECT_H

#include "dataset.h"
#include "device_cl.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    cl_mem points, ids;         /* the tree: points in tree order, original rows */
    uint64_t peak_bytes, moved; /* device bytes at the peak; bytes the kernels moved
                                    (model: key passes and the move to the other copy) */
} lbk_kdtree_select_tree;

/* Device bytes a select build of n points allocates at its peak. */
uint64_t lbk_kdtree_select_bytes(uint64_t n, int dim);

/* `wide`: the shard's points already on the device as float32 (compact
 * points, widened there), taken over and released by the build; NULL =
 * upload reference->points. */
lbk_status lbk_kdtree_select_build(lbk_device *dev, const lbk_dataset *reference, cl_mem wide,
                                   uint64_t segment_max, int rotation, bool profile,
                                   lbk_kdtree_select_tree *out);

#endif
