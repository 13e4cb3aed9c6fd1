/* The k-d tree builder's sort of each level (Wald's tag sort): the global
 * radix sort, the segmented sort of short runs, and the bitonic sort. */
#include "kdtree_build_impl.h"

#include "lbk_shared.h"
#include "log.h"
#include "timer.h"
#include "try.h"

#include <stdio.h>

static void swap_tracked(lbk_kdtree_tracked *a, lbk_kdtree_tracked *b)
{
    const lbk_kdtree_tracked t = *a;
    *a = *b;
    *b = t;
}

/* After a radix sort wrote [lo, n) of the second copy of the state: make it
 * current, and copy the nodes it settled, [lo, settled), into the other. */
static lbk_status swap_and_settle(lbk_kdtree_builder *b, uint64_t lo, uint64_t settled)
{
    swap_tracked(&b->points, &b->points2);
    swap_tracked(&b->rows, &b->rows2);
    swap_tracked(&b->dims, &b->dims2);
    if (settled <= lo || settled >= b->n)
        return LBK_OK; /* nothing settled, or the build is complete */
    const cl_ulong clo = lo, ccount = settled - lo;
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_COPY], LBK_ARG(b->points.mem), LBK_ARG(b->points2.mem),
                            LBK_ARG(b->dim), LBK_ARG(b->rows.mem), LBK_ARG(b->rows2.mem),
                            LBK_ARG(b->dims.mem), LBK_ARG(b->dims2.mem), LBK_ARG(b->has_dims),
                            LBK_ARG(clo), LBK_ARG(ccount)));
    LBK_TRY(lbk_kdtree_launch(b, K_COPY, ccount, 0));
    b->moved += ccount * 2 * ((uint64_t)b->dim * 4 + 4 + (b->has_dims ? 1 : 0));
    return LBK_OK;
}

/* The radix passes over keys and perm of `count` positions, `blocks`
 * sequential blocks each; the sorted pair ends in keys and perm. */
static lbk_status radix_passes(lbk_kdtree_builder *b, uint64_t count, int passes, int tag_only)
{
    const uint64_t blocks64 =
        (count + 4095) / 4096 < b->radix_blocks_max ? (count + 4095) / 4096 : b->radix_blocks_max;
    const cl_uint blocks = (cl_uint)blocks64;
    const cl_ulong block_len = (count + blocks - 1) / blocks;
    const cl_uint entries = 256u * blocks;
    const cl_ulong ccount = count;
    for (int p = 0; p < passes; p++) {
        /* Tag-only keys hold nothing below bit 32. */
        const cl_uint shift = (tag_only ? 32u : 0u) + 8u * (cl_uint)p;
        LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_HIST], LBK_ARG(b->keys.mem), LBK_ARG(ccount),
                                LBK_ARG(shift), LBK_ARG(block_len), LBK_ARG(blocks),
                                LBK_ARG(b->hist.mem)));
        LBK_TRY(lbk_kdtree_launch(b, K_HIST, blocks, 1));
        LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_SCAN], LBK_ARG(b->hist.mem), LBK_ARG(entries)));
        LBK_TRY(lbk_kdtree_launch(b, K_SCAN, 1, 1));
        LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_SCATTER], LBK_ARG(b->keys.mem), LBK_ARG(b->perm.mem),
                                LBK_ARG(b->keys2.mem), LBK_ARG(b->perm2.mem), LBK_ARG(ccount),
                                LBK_ARG(shift), LBK_ARG(block_len), LBK_ARG(blocks),
                                LBK_ARG(b->hist.mem)));
        LBK_TRY(lbk_kdtree_launch(b, K_SCATTER, blocks, 1));
        b->moved += count * (8 + 24);
        swap_tracked(&b->keys, &b->keys2);
        swap_tracked(&b->perm, &b->perm2);
    }
    return LBK_OK;
}

/* Sort positions [lo, lo + count) by (tag, split coordinate); tags lie in
 * [tag_lo, tag_hi]. */
static lbk_status radix_sort(lbk_kdtree_builder *b, uint64_t lo, uint64_t count, uint32_t tag_lo,
                             uint32_t tag_hi, int tag_only, cl_int rr_dim, uint64_t settled)
{
    const int bits = (int)lbk_bit_length(tag_hi - tag_lo) + (tag_only ? 0 : 32);
    const int passes = (bits + 7) / 8;
    if (count < 2 || passes == 0)
        return LBK_OK;
    const cl_ulong clo = lo, ccount = count;
    const cl_uint ctag_lo = tag_lo;
    const cl_int ctag_only = tag_only;
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_KEYS], LBK_ARG(b->points.mem), LBK_ARG(b->dim),
                            LBK_ARG(b->tags.mem), LBK_ARG(b->dims.mem), LBK_ARG(b->has_dims),
                            LBK_ARG(rr_dim), LBK_ARG(clo), LBK_ARG(ccount), LBK_ARG(ctag_lo),
                            LBK_ARG(ctag_only), LBK_ARG(b->keys.mem), LBK_ARG(b->perm.mem)));
    LBK_TRY(lbk_kdtree_launch(b, K_KEYS, count, 0));
    b->moved += count * (4 + 4 + 4 + 12 + (b->has_dims ? 1 : 0));
    LBK_TRY(radix_passes(b, count, passes, tag_only));
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_APPLY], LBK_ARG(b->keys.mem), LBK_ARG(b->perm.mem),
                            LBK_ARG(clo), LBK_ARG(ccount), LBK_ARG(ctag_lo),
                            LBK_ARG(b->points.mem), LBK_ARG(b->points2.mem), LBK_ARG(b->dim),
                            LBK_ARG(b->rows.mem), LBK_ARG(b->rows2.mem), LBK_ARG(b->dims.mem),
                            LBK_ARG(b->dims2.mem), LBK_ARG(b->has_dims), LBK_ARG(b->tags.mem)));
    LBK_TRY(lbk_kdtree_launch(b, K_APPLY, count, 0));
    b->moved += count * (12 + 8 + 2 * ((uint64_t)b->dim * 4) + (b->has_dims ? 2 : 0));
    return swap_and_settle(b, lo, settled);
}

static int log2_ceil(uint64_t v)
{
    int l = 0;
    while (((uint64_t)1 << l) < v)
        l++;
    return l;
}

/* kd_bitonic_block over [lo, lo + n): stages first..last, the first from
 * step jfirst. */
static lbk_status bitonic_block(lbk_kdtree_builder *b, cl_ulong lo, cl_ulong n, cl_int rr_dim,
                                uint64_t pairs, cl_uint first, cl_uint last, cl_uint jfirst)
{
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_BLOCK], LBK_ARG(b->points.mem), LBK_ARG(b->dim),
                            LBK_ARG(b->rows.mem), LBK_ARG(b->tags.mem), LBK_ARG(b->dims.mem),
                            LBK_ARG(b->has_dims), LBK_ARG(rr_dim), LBK_ARG(lo), LBK_ARG(n),
                            LBK_ARG(first), LBK_ARG(last), LBK_ARG(jfirst)));
    return lbk_kdtree_launch(b, K_BLOCK, pairs, b->block_local);
}

static lbk_status bitonic_sort(lbk_kdtree_builder *b, uint64_t lo, uint64_t count, cl_int rr_dim)
{
    if (count < 2)
        return LBK_OK;
    const cl_ulong clo = lo, cn = count;
    const int log_m = log2_ceil(count);
    const int log_b = log2_ceil(2 * b->block_local);
    const uint64_t pairs = (uint64_t)1 << (log_m - 1);
    const uint64_t elem = (uint64_t)b->dim * 4 + 8 + (b->has_dims ? 1 : 0);
    /* Per step: both keys read for every pair, and (on average) half the
     * pairs swapped. */
    const uint64_t step_bytes = count * (8 + elem);
    const cl_uint last = (cl_uint)(log_m < log_b ? log_m : log_b);
    LBK_TRY(bitonic_block(b, clo, cn, rr_dim, pairs, 1, last, 0));
    b->moved += step_bytes * (uint64_t)last * (last + 1) / 2;
    for (int log_k = log_b + 1; log_k <= log_m; log_k++) {
        for (int log_j = log_k - 1; log_j >= log_b; log_j--) {
            const cl_uint ck = (cl_uint)log_k, cj = (cl_uint)log_j;
            LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_STEP], LBK_ARG(b->points.mem), LBK_ARG(b->dim),
                                    LBK_ARG(b->rows.mem), LBK_ARG(b->tags.mem),
                                    LBK_ARG(b->dims.mem), LBK_ARG(b->has_dims), LBK_ARG(rr_dim),
                                    LBK_ARG(clo), LBK_ARG(cn), LBK_ARG(ck), LBK_ARG(cj)));
            LBK_TRY(lbk_kdtree_launch(b, K_STEP, pairs, 0));
            b->moved += step_bytes;
        }
        LBK_TRY(bitonic_block(b, clo, cn, rr_dim, pairs, (cl_uint)log_k, (cl_uint)log_k,
                              (cl_uint)log_b - 1));
        b->moved += step_bytes * (uint64_t)log_b;
    }
    return LBK_OK;
}

/* The sort of `level` (the level about to be split, or levels - 1 for the
 * last, tag-only sort) as one work-item per run; see kd_seg_sort. */
static lbk_status segmented_sort(lbk_kdtree_builder *b, int level, int tag_only, cl_int rr_dim,
                                 uint64_t settled)
{
    const cl_ulong cn = b->n;
    const cl_uint clevels = (cl_uint)b->levels, clevel = (cl_uint)level;
    const cl_int ctag_only = tag_only;
    const uint64_t lo = level == 0 ? 0 : ((uint64_t)1 << (level - 1)) - 1;
    const cl_ulong ccount = b->n - lo;
    /* Enough groups to keep every compute unit busy, but not one per run:
     * PoCL's per-group cost dominated the deep levels. */
    size_t seg_local = ((size_t)1 << level) / (8 * (size_t)b->compute_units);
    seg_local = seg_local < 1 ? 1 : seg_local > 64 ? 64 : seg_local;
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_SEG_SORT], LBK_ARG(b->points.mem), LBK_ARG(b->dim),
                            LBK_ARG(b->rows.mem), LBK_ARG(b->dims.mem), LBK_ARG(b->has_dims),
                            LBK_ARG(rr_dim), LBK_ARG(cn), LBK_ARG(clevels), LBK_ARG(clevel),
                            LBK_ARG(ctag_only), LBK_ARG(b->points2.mem), LBK_ARG(b->rows2.mem),
                            LBK_ARG(b->dims2.mem), LBK_ARG(b->tags.mem), LBK_ARG(b->keys.mem),
                            LBK_ARG(b->keys2.mem), LBK_ARG(b->child_dims.mem)));
    LBK_TRY(lbk_kdtree_launch(b, K_SEG_SORT, (uint64_t)1 << level, seg_local));
    if (level > 0) {
        LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_SEG_PIVOTS], LBK_ARG(b->points.mem), LBK_ARG(b->dim),
                                LBK_ARG(b->rows.mem), LBK_ARG(b->dims.mem), LBK_ARG(b->has_dims),
                                LBK_ARG(cn), LBK_ARG(clevels), LBK_ARG(clevel),
                                LBK_ARG(b->points2.mem), LBK_ARG(b->rows2.mem),
                                LBK_ARG(b->dims2.mem), LBK_ARG(b->tags.mem)));
        LBK_TRY(lbk_kdtree_launch(b, K_SEG_PIVOTS, (uint64_t)1 << (level - 1), 0));
    }
    /* Position and key through scratch (about two radix passes), the
     * state gathered into place, tags out. */
    b->moved += ccount * (4 + 8 + 2 * 16 + 8 + 2 * ((uint64_t)b->dim * 4 + 1) + 4);
    return swap_and_settle(b, lo, settled);
}

static lbk_status sort_level(lbk_kdtree_builder *b, uint64_t lo, uint32_t tag_lo, uint32_t tag_hi,
                             int tag_only, int level);

lbk_status lbk_kdtree_sort_range(lbk_kdtree_builder *b, uint64_t lo, uint32_t tag_lo,
                                 uint32_t tag_hi, int tag_only, int level)
{
    if (!b->profile)
        return sort_level(b, lo, tag_lo, tag_hi, tag_only, level);
    const double t0 = lbk_timer_now();
    const lbk_status st = sort_level(b, lo, tag_lo, tag_hi, tag_only, level);
    fprintf(stderr, "kdtree profile: sort of level %2d: %.4f s\n",
            tag_only ? b->levels - 1 : level, lbk_timer_now() - t0);
    return st;
}

static lbk_status sort_level(lbk_kdtree_builder *b, uint64_t lo, uint32_t tag_lo, uint32_t tag_hi,
                             int tag_only, int level)
{
    const cl_int rr_dim = (b->rotation + level) % b->dim;
    if (b->sort == LBK_SORT_RADIX) {
        const int split_level = tag_only ? b->levels - 1 : level;
        /* Slots below this are settled once the sort is done. */
        const uint64_t settled = tag_only ? b->n : ((uint64_t)1 << level) - 1;
        const uint64_t run = lbk_kdtree_subtree_size(((uint64_t)1 << split_level) - 1, b->n);
        if (tag_only || run <= b->segment_max)
            return segmented_sort(b, split_level, tag_only, rr_dim, settled);
        return radix_sort(b, lo, b->n - lo, tag_lo, tag_hi, tag_only, rr_dim, settled);
    }
    return bitonic_sort(b, lo, b->n - lo, rr_dim);
}
