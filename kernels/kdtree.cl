/* Tag-sort builder of left-balanced k-d trees (Wald, arXiv 2211.00120).
 *
 * State per point: tag (the node whose subtree holds it), row (its original
 * shard row) and, for the widest-dimension rule, dims (its subtree's split
 * dimension). Node ids and positions use 64-bit arithmetic so that the
 * formulas stay exact for N close to 2^31.
 *
 * Both sorts move the points themselves, so that every pass reads them in
 * array order (an indirection through the row ids made the key pass a random
 * gather over the whole shard).
 *
 * Sort keys compare coordinates as order-preserving integer bits (kd_flip),
 * in both sorts, so that -0/+0 and even non-finite values have one total
 * order and the two sorts agree wherever the order is strict. */

/* The shape formulas (levels, subtree size, segment begin, pivot) are the
 * lbk_kd_* functions of lbk_shared.h, shared with the host. */

/* Keys: lbk_order_bits (lbk_shared.h). */
#define kd_flip lbk_order_bits

/* Round robin: every point being sorted at level l splits on rr_dim = l mod
 * dim (the host passes it; an integer division per element was a third of
 * the key kernel's time). The level l-1 pivots in the range use it too,
 * harmlessly: each is alone in its tag. */
static inline int kd_split_dim(__global const uchar *dims, int has_dims, ulong x, int rr_dim)
{
    return has_dims ? (int)dims[x] : rr_dim;
}

__kernel void kd_init(__global uint *tags, __global uint *rows, __global uchar *dims,
                      int has_dims, uint first_dim, ulong n)
{
    const ulong i = get_global_id(0);
    if (i >= n)
        return;
    tags[i] = 0;
    rows[i] = (uint)i;
    if (has_dims)
        dims[i] = (uchar)first_dim;
}

/* ---- radix sort: 64-bit keys (tag - tag_lo) << 32 | flipped coordinate ---- */

__kernel void kd_make_keys(__global const float *points, int dim, __global const uint *tags,
                           __global const uchar *dims, int has_dims, int rr_dim, ulong lo,
                           ulong count, uint tag_lo, int tag_only, __global ulong *keys,
                           __global uint *perm)
{
    const ulong i = get_global_id(0);
    if (i >= count)
        return;
    const ulong x = lo + i;
    const uint tag = tags[x];
    ulong key = (ulong)(tag - tag_lo) << 32;
    if (!tag_only) {
        const int j = kd_split_dim(dims, has_dims, x, rr_dim);
        key |= kd_flip(points[x * (ulong)dim + (ulong)j]);
    }
    keys[i] = key;
    perm[i] = (uint)x;
}

#define KD_RADIX 256

/* One work-item per block, sequential inside it: cheap per element on CPU
 * devices, and trivially stable. */
__kernel void kd_radix_hist(__global const ulong *keys, ulong count, uint shift, ulong block_len,
                            uint blocks, __global uint *hist)
{
    const uint b = get_global_id(0);
    if (b >= blocks)
        return;
    uint h[KD_RADIX];
    for (int d = 0; d < KD_RADIX; d++)
        h[d] = 0;
    const ulong begin = (ulong)b * block_len;
    const ulong end = min(count, begin + block_len);
    for (ulong i = begin; i < end; i++)
        h[(keys[i] >> shift) & (KD_RADIX - 1)]++;
    for (int d = 0; d < KD_RADIX; d++)
        hist[(ulong)d * blocks + b] = h[d];
}

/* Exclusive scan, digit-major, so that each block's output for a digit
 * follows the previous blocks' (stability). The table is 256 * blocks. */
__kernel void kd_radix_scan(__global uint *hist, uint entries)
{
    if (get_global_id(0) != 0)
        return;
    uint sum = 0;
    for (uint i = 0; i < entries; i++) {
        const uint v = hist[i];
        hist[i] = sum;
        sum += v;
    }
}

__kernel void kd_radix_scatter(__global const ulong *keys_in, __global const uint *perm_in,
                               __global ulong *keys_out, __global uint *perm_out, ulong count,
                               uint shift, ulong block_len, uint blocks,
                               __global const uint *hist)
{
    const uint b = get_global_id(0);
    if (b >= blocks)
        return;
    uint off[KD_RADIX];
    for (int d = 0; d < KD_RADIX; d++)
        off[d] = hist[(ulong)d * blocks + b];
    const ulong begin = (ulong)b * block_len;
    const ulong end = min(count, begin + block_len);
    for (ulong i = begin; i < end; i++) {
        const ulong key = keys_in[i];
        const uint pos = off[(key >> shift) & (KD_RADIX - 1)]++;
        keys_out[pos] = key;
        perm_out[pos] = perm_in[i];
    }
}

/* Apply the sorted order to the per-point state of [lo, lo + count); the
 * tag comes back out of the key. */
__kernel void kd_radix_apply(__global const ulong *keys, __global const uint *perm, ulong lo,
                             ulong count, uint tag_lo, __global const float *points_in,
                             __global float *points_out, int dim, __global const uint *rows_in,
                             __global uint *rows_out, __global const uchar *dims_in,
                             __global uchar *dims_out, int has_dims, __global uint *tags)
{
    const ulong i = get_global_id(0);
    if (i >= count)
        return;
    const ulong from = perm[i];
    const ulong to = lo + i;
    rows_out[to] = rows_in[from];
    for (int j = 0; j < dim; j++)
        points_out[to * (ulong)dim + (ulong)j] = points_in[from * (ulong)dim + (ulong)j];
    if (has_dims)
        dims_out[to] = dims_in[from];
    tags[to] = (uint)(keys[i] >> 32) + tag_lo;
}

/* Radix ping-pongs between two copies of the state; the nodes a sort just
 * settled are copied into the other copy, so both always hold every settled
 * node and later sorts need only write the unsettled range. */
__kernel void kd_copy_range(__global const float *points_in, __global float *points_out, int dim,
                            __global const uint *rows_in, __global uint *rows_out,
                            __global const uchar *dims_in, __global uchar *dims_out, int has_dims,
                            ulong lo, ulong count)
{
    const ulong i = lo + get_global_id(0);
    if (i >= lo + count)
        return;
    rows_out[i] = rows_in[i];
    for (int j = 0; j < dim; j++)
        points_out[i * (ulong)dim + (ulong)j] = points_in[i * (ulong)dim + (ulong)j];
    if (has_dims)
        dims_out[i] = dims_in[i];
}

/* ---- bitonic sort: swaps only, the points move in place ----
 *
 * The "flip" form of the network: the first step of every merge stage
 * compares mirrored positions, and every step sorts ascending. Positions at or
 * past `n` then behave as +infinity that never has to move, so any n works
 * without padding memory. */

static inline bool kd_greater(__global const float *points, int dim, __global const uint *rows,
                              __global const uint *tags, __global const uchar *dims, int has_dims,
                              int rr_dim, ulong a, ulong b)
{
    const uint ta = tags[a], tb = tags[b];
    if (ta != tb)
        return ta > tb;
    const int j = kd_split_dim(dims, has_dims, a, rr_dim);
    const uint ka = kd_flip(points[a * (ulong)dim + (ulong)j]);
    const uint kb = kd_flip(points[b * (ulong)dim + (ulong)j]);
    if (ka != kb)
        return ka > kb;
    return rows[a] > rows[b];
}

static inline void kd_swap(__global float *points, int dim, __global uint *rows,
                           __global uint *tags, __global uchar *dims, int has_dims, ulong a,
                           ulong b)
{
    const uint t = tags[a];
    tags[a] = tags[b];
    tags[b] = t;
    const uint r = rows[a];
    rows[a] = rows[b];
    rows[b] = r;
    if (has_dims) {
        const uchar d = dims[a];
        dims[a] = dims[b];
        dims[b] = d;
    }
    __global float *pa = points + a * (ulong)dim;
    __global float *pb = points + b * (ulong)dim;
    for (int j = 0; j < dim; j++) {
        const float v = pa[j];
        pa[j] = pb[j];
        pb[j] = v;
    }
}

/* One compare-exchange of the network step (k, j) for pair t; log2 values
 * given so that no division is needed. */
static inline void kd_bitonic_pair(__global float *points, int dim, __global uint *rows,
                                   __global uint *tags, __global uchar *dims, int has_dims,
                                   int rr_dim, ulong lo, ulong n, uint log_k, uint log_j, ulong t)
{
    ulong a, b;
    if (log_j + 1 == log_k) {
        const ulong half_mask = ((ulong)1 << log_j) - 1;
        const ulong base = (t >> log_j) << log_k;
        a = base + (t & half_mask);
        b = base + ((ulong)1 << log_k) - 1 - (t & half_mask);
    } else {
        const ulong mask = ((ulong)1 << log_j) - 1;
        a = ((t >> log_j) << (log_j + 1)) + (t & mask);
        b = a + ((ulong)1 << log_j);
    }
    if (b >= n)
        return;
    if (kd_greater(points, dim, rows, tags, dims, has_dims, rr_dim, lo + a, lo + b))
        kd_swap(points, dim, rows, tags, dims, has_dims, lo + a, lo + b);
}

__kernel void kd_bitonic_step(__global float *points, int dim, __global uint *rows,
                              __global uint *tags, __global uchar *dims, int has_dims, int rr_dim,
                              ulong lo, ulong n, uint log_k, uint log_j)
{
    kd_bitonic_pair(points, dim, rows, tags, dims, has_dims, rr_dim, lo, n, log_k, log_j,
                    get_global_id(0));
}

/* All steps whose pairs stay inside one block of 2 * local size elements,
 * for stages log_k_first .. log_k_last; the first stage starts at log_j_first.
 * The block is private to the work-group, so global-memory barriers order the
 * steps. */
__kernel void kd_bitonic_block(__global float *points, int dim, __global uint *rows,
                               __global uint *tags, __global uchar *dims, int has_dims,
                               int rr_dim, ulong lo, ulong n, uint log_k_first, uint log_k_last,
                               uint log_j_first)
{
    const ulong t = get_global_id(0);
    for (uint log_k = log_k_first; log_k <= log_k_last; log_k++) {
        for (int log_j = (int)(log_k == log_k_first ? log_j_first : log_k - 1); log_j >= 0;
             log_j--) {
            kd_bitonic_pair(points, dim, rows, tags, dims, has_dims, rr_dim, lo, n, log_k,
                            (uint)log_j, t);
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
    }
}

/* ---- update pass: every unsettled point learns which child it went to ---- */

__kernel void kd_update(__global uint *tags, __global uchar *dims, int has_dims,
                        __global const uchar *child_dims, ulong lo, ulong n, uint levels,
                        uint level)
{
    const ulong i = lo + get_global_id(0);
    if (i >= n)
        return;
    const ulong s = tags[i];
    const ulong p = lbk_kd_pivot(s, n, levels);
    if (i == p)
        return;
    const ulong c = i < p ? 2 * s + 1 : 2 * s + 2;
    tags[i] = (uint)c;
    if (has_dims)
        dims[i] = child_dims[c - (((ulong)1 << (level + 1)) - 1)];
}

/* Widest rule: one work-item per node s of `level` computes its children's
 * split dimensions. The box of a child is the world box clipped by every
 * settled ancestor's plane and by s's own pivot; it is rebuilt one dimension
 * at a time so that no per-thread array is needed. Ties go to the highest
 * dimension. */
__kernel void kd_child_dims(__global const float *points, int dim, __global const uchar *dims,
                            __global const float *world_lo, __global const float *world_hi,
                            ulong n, uint levels, uint level, __global uchar *child_dims)
{
    const ulong first = ((ulong)1 << level) - 1;
    const ulong s = first + get_global_id(0);
    if (s >= n || s >= 2 * first + 1)
        return;
    const ulong p = lbk_kd_pivot(s, n, levels);
    const int ds = dims[p];
    const float plane_s = points[p * (ulong)dim + (ulong)ds];
    for (int side = 0; side < 2; side++) {
        const ulong c = 2 * s + 1 + (ulong)side;
        if (c >= n)
            continue;
        float best = -INFINITY;
        int best_j = 0;
        for (int j = 0; j < dim; j++) {
            float lo = world_lo[j], hi = world_hi[j];
            if (j == ds) {
                if (side == 0)
                    hi = plane_s < hi ? plane_s : hi;
                else
                    lo = plane_s > lo ? plane_s : lo;
            }
            for (ulong x = s; x > 0;) {
                const ulong par = (x - 1) / 2;
                if (dims[par] == j) {
                    const float plane = points[par * (ulong)dim + (ulong)j];
                    if (x == 2 * par + 1)
                        hi = plane < hi ? plane : hi;
                    else
                        lo = plane > lo ? plane : lo;
                }
                x = par;
            }
            const float width = hi - lo;
            if (width >= best) {
                best = width;
                best_j = j;
            }
        }
        child_dims[c - (2 * first + 1)] = (uchar)best_j;
    }
}

/* ---- segmented radix: once segments are small, each work-item sorts one ----
 *
 * After level-1's update the array is laid out by structure alone: for each
 * node s of level-1, its left child's points at [sb(s), p(s)), its pivot at
 * p(s), its right child's points after. Sorting by (tag, coordinate) is then
 * "move each pivot to slot s, and sort each child's run by coordinate into
 * [sb(c), sb(c) + ss(c))". One work-item per child sorts its run in scratch
 * (insertion sort when short, else an 8-bit LSD radix), stable like the
 * global radix, so both paths build the same tree. */

#define KD_SHORT_RUN 32

/* Sort a short run in place: insertion sort of (key, payload), stable. */
static inline void kd_insertion_sort(__global uint *k1, __global uint *r1, ulong size)
{
    for (ulong i = 1; i < size; i++) {
        const uint k = k1[i], r = r1[i];
        ulong x = i;
        while (x > 0 && k1[x - 1] > k) {
            k1[x] = k1[x - 1];
            r1[x] = r1[x - 1];
            x--;
        }
        k1[x] = k;
        r1[x] = r;
    }
}

/* 8-bit LSD radix sort of (key, payload) between two scratch copies, stable.
 * Returns true when the sorted run ends up in the second copy. */
static inline bool kd_radix_run(__global uint *k1, __global uint *r1, __global uint *k2,
                                __global uint *r2, ulong size)
{
    /* All four digit histograms in one sweep. */
    uint h[4][KD_RADIX];
    for (int p = 0; p < 4; p++)
        for (int d = 0; d < KD_RADIX; d++)
            h[p][d] = 0;
    for (ulong i = 0; i < size; i++) {
        const uint k = k1[i];
        h[0][k & 0xff]++;
        h[1][(k >> 8) & 0xff]++;
        h[2][(k >> 16) & 0xff]++;
        h[3][k >> 24]++;
    }
    bool swapped = false;
    for (int p = 0; p < 4; p++) {
        const uint shift = 8u * (uint)p;
        if (h[p][(k1[0] >> shift) & 0xff] == size)
            continue; /* one digit value: the pass would not move anything */
        uint sum = 0;
        for (int d = 0; d < KD_RADIX; d++) {
            const uint v = h[p][d];
            h[p][d] = sum;
            sum += v;
        }
        for (ulong i = 0; i < size; i++) {
            const uint k = k1[i];
            const uint pos = h[p][(k >> shift) & 0xff]++;
            k2[pos] = k;
            r2[pos] = r1[i];
        }
        __global uint *t = k1;
        k1 = k2;
        k2 = t;
        t = r1;
        r1 = r2;
        r2 = t;
        swapped = !swapped;
    }
    return swapped;
}

/* Where child c's run starts before the sort: its parent's segment for a
 * left child, after the parent's pivot for a right one (the root: 0). */
static inline ulong kd_run_source(ulong c, ulong n, uint levels, uint level)
{
    if (level == 0)
        return 0;
    const ulong s = (c - 1) / 2;
    return c == 2 * s + 1 ? lbk_kd_segment_begin(s, n, levels) : lbk_kd_pivot(s, n, levels) + 1;
}

__kernel void kd_seg_sort(__global const float *points, int dim, __global const uint *rows,
                          __global const uchar *dims, int has_dims, int rr_dim, ulong n,
                          uint levels, uint level, int tag_only, __global float *points_out,
                          __global uint *rows_out, __global uchar *dims_out, __global uint *tags,
                          __global uint *scratch, __global uint *scratch2,
                          __global const uchar *child_dims)
{
    const ulong first = ((ulong)1 << level) - 1;
    const ulong c = first + get_global_id(0);
    if (c >= n || c > 2 * first)
        return;
    const ulong src = kd_run_source(c, n, levels, level);
    const ulong size = lbk_kd_subtree_size(c, n, levels);
    const ulong dst = lbk_kd_segment_begin(c, n, levels);
    __global uint *k1 = scratch + dst, *r1 = scratch + n + dst;
    __global uint *k2 = scratch2 + dst, *r2 = scratch2 + n + dst;
    /* Widest: the run's split dimension was chosen by kd_child_dims (the
     * root's is every point's initial byte). */
    const uchar sd = !has_dims ? 0 : level == 0 ? dims[0] : child_dims[c - first];
    const int j = has_dims ? (int)sd : rr_dim;
    /* The payload is the source position: rows, points and dims follow it
     * once the order is known. */
    for (ulong i = 0; i < size; i++) {
        r1[i] = (uint)(src + i);
        k1[i] = tag_only ? 0u : kd_flip(points[(src + i) * (ulong)dim + (ulong)j]);
    }
    if (size <= KD_SHORT_RUN)
        kd_insertion_sort(k1, r1, size);
    else if (kd_radix_run(k1, r1, k2, r2, size))
        r1 = r2;
    for (ulong i = 0; i < size; i++) {
        const ulong from = r1[i], to = dst + i;
        rows_out[to] = rows[from];
        for (int d = 0; d < dim; d++)
            points_out[to * (ulong)dim + (ulong)d] = points[from * (ulong)dim + (ulong)d];
        tags[to] = (uint)c;
        if (has_dims)
            dims_out[to] = sd;
    }
}

/* The other half of a segmented sort: level-1's pivots to their slots. */
__kernel void kd_seg_pivots(__global const float *points, int dim, __global const uint *rows,
                            __global const uchar *dims, int has_dims, ulong n, uint levels,
                            uint level, __global float *points_out, __global uint *rows_out,
                            __global uchar *dims_out, __global uint *tags)
{
    const ulong first = ((ulong)1 << (level - 1)) - 1;
    const ulong s = first + get_global_id(0);
    if (s >= n || s > 2 * first)
        return;
    const ulong p = lbk_kd_pivot(s, n, levels);
    rows_out[s] = rows[p];
    for (int j = 0; j < dim; j++)
        points_out[s * (ulong)dim + (ulong)j] = points[p * (ulong)dim + (ulong)j];
    if (has_dims)
        dims_out[s] = dims[p];
    tags[s] = (uint)s;
}
