/* The k-d tree builder's state, shared by kdtree.c (plan, buffers,
 * levels) and kdtree_sort.c (each level's sort), and no one else. */
#ifndef LBK_KDTREE_BUILD_IMPL_H
#define LBK_KDTREE_BUILD_IMPL_H

#include "device_cl.h"
#include "kdtree.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    cl_mem mem;
    size_t bytes;
} lbk_kdtree_tracked;

enum {
    K_INIT,
    K_KEYS,
    K_HIST,
    K_SCAN,
    K_SCATTER,
    K_APPLY,
    K_COPY,
    K_STEP,
    K_BLOCK,
    K_UPDATE,
    K_CHILD,
    K_SEG_SORT,
    K_SEG_PIVOTS,
    K_COUNT
};

typedef struct {
    lbk_device *dev;
    cl_command_queue queue;
    cl_kernel kernels[K_COUNT];
    uint64_t n;
    int dim;
    int levels;
    cl_int has_dims;
    int rotation; /* round robin: level l sorts by dimension (rotation + l) mod dim */
    lbk_tree_sort sort;
    uint64_t current_bytes, peak_bytes, moved;
    size_t elementwise_local;
    size_t block_local; /* bitonic work-group size; blocks of twice this */
    uint64_t radix_blocks_max;
    uint64_t segment_max; /* radix: levels whose runs are at most this use kd_seg_sort */
    int compute_units;
    bool profile; /* params.profile: time every kernel and level */
    double kernel_s[K_COUNT];
    lbk_kdtree_tracked points, rows, tags, dims, points2, rows2, dims2, keys, keys2, perm, perm2,
        hist;
    lbk_kdtree_tracked world_lo, world_hi, child_dims;
} lbk_kdtree_builder;

/* kdtree.c: one kernel over `global` work-items (work-groups of `local`, or
 * the builder's element-wise size), timed under params.profile. */
lbk_status lbk_kdtree_launch(lbk_kdtree_builder *b, int k, uint64_t global, size_t local);

/* kdtree_sort.c: one level's sort of [lo, n) by tag and coordinate (radix,
 * segmented or bitonic, as planned); with params.profile, timed. */
lbk_status lbk_kdtree_sort_range(lbk_kdtree_builder *b, uint64_t lo, uint32_t tag_lo,
                                 uint32_t tag_hi, int tag_only, int level);

/* kdtree_compact.c: compact points (uint8, int8, float16) uploaded and
 * widened into a new float32 buffer *wide for the builders (the upload
 * released; *peak: both at once); and `count` float32 values narrowed back
 * to `type` into a new buffer *out, exactly. */
lbk_status lbk_kdtree_compact_widen(lbk_device *dev, const lbk_dataset *reference, cl_mem *wide,
                                    uint64_t *peak);
lbk_status lbk_kdtree_compact_narrow(lbk_device *dev, lbk_dtype type, cl_mem points,
                                     uint64_t count, cl_mem *out);

#endif
