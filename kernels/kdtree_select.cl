/* The select builder of left-balanced k-d trees (CPU devices, round-robin
 * split; host side: src/engines/kdtree_select.c). Its own program, so that
 * a build loads only these kernels (loading all of kdtree.cl from PoCL's
 * cache took 35-60 ms, a quarter of a 1e6-point build). The tree's shape
 * formulas are lbk_shared.h's lbk_kd_*, as in kdtree.cl.
 *
 * Compile-time parameter: KD_SEL_DIM (optional), the point dimension, so
 * that the loops over it unroll. */

#define kd_flip lbk_order_bits

/* A quickselect per node.
 *
 * The order the tag sorts leave a node's run in is lexicographic: the stable
 * sort at level l breaks ties by the order of level l - 1, so it sorts by
 * (key of dim(l), key of dim(l-1), ..., key of dim(0), row), where a
 * dimension seen again adds nothing: with round robin, (dim (r+l) mod D,
 * (r+l-1) mod D, ..., down to level max(0, l-D+1), row), r the tree's
 * rotation (the dimension of its root, kdtree.h). That order does not
 * depend on how the run is arranged, so each node needs only its pivot (the
 * element of rank ss(left child) in it) and the split of the rest into the
 * smaller and the larger side: a quickselect in place, as sequential k-d
 * builders do, and the same tree as the tag sorts, node for node. A node's
 * run lies in a contiguous range of the work array (the in-order layout:
 * left child's range, the pivot, the right child's range); the pivot is
 * copied to its slot of the tree. All keys differ (the row is part of
 * them), so a partition never meets an equal element. */

/* (point a, row ra) before (point b, row rb) in level `level`'s order;
 * j0 = (rot + level) mod dim. */
static inline bool kd_sel_less(__global const float *pa, uint ra, __global const float *pb,
                               uint rb, int dim, uint level, int j0)
{
    const uint depth = min(level + 1u, (uint)dim);
    int j = j0;
    for (uint t = 0; t < depth; t++) {
        const uint ka = kd_flip(pa[j]), kb = kd_flip(pb[j]);
        if (ka != kb)
            return ka < kb;
        j = j == 0 ? dim - 1 : j - 1;
    }
    return ra < rb;
}

static inline void kd_sel_swap(__global float *pts, __global uint *rows, int dim, ulong a,
                               ulong b)
{
    const uint r = rows[a];
    rows[a] = rows[b];
    rows[b] = r;
    __global float *pa = pts + a * (ulong)dim;
    __global float *pb = pts + b * (ulong)dim;
    for (int j = 0; j < dim; j++) {
        const float v = pa[j];
        pa[j] = pb[j];
        pb[j] = v;
    }
}

/* (a and b are evaluated twice: no side effects in them.) */
#define KD_SEL_LESS(a, b)                                                                        \
    kd_sel_less(pts + (ulong)(a) * (ulong)dim, rows[a], pts + (ulong)(b) * (ulong)dim, rows[b],  \
                dim, level, j0)

/* Insertion sort of [lo, hi] (short ranges). */
static inline void kd_sel_insertion(__global float *pts, __global uint *rows, int dim, uint level,
                                    int j0, ulong lo, ulong hi)
{
    for (ulong i = lo + 1; i <= hi; i++)
        for (ulong x = i; x > lo && KD_SEL_LESS(x, x - 1); x--)
            kd_sel_swap(pts, rows, dim, x, x - 1);
}

/* The median of a, b, c moved to lo (the partition's pivot). */
static inline void kd_sel_median_to(__global float *pts, __global uint *rows, int dim, uint level,
                                    int j0, ulong lo, ulong a, ulong b, ulong c)
{
    ulong m;
    if (KD_SEL_LESS(a, b))
        m = KD_SEL_LESS(b, c) ? b : KD_SEL_LESS(a, c) ? c : a;
    else
        m = KD_SEL_LESS(a, c) ? a : KD_SEL_LESS(b, c) ? c : b;
    if (m != lo)
        kd_sel_swap(pts, rows, dim, lo, m);
}

/* Put the element of rank k of [lo, hi] at k, the smaller ones before it,
 * the larger after (Hoare's partition around a median of three, or of
 * three medians of three on long ranges). */
static inline void kd_sel_nth(__global float *pts, __global uint *rows, int dim, uint level,
                              uint rot, ulong lo, ulong hi, ulong k)
{
    const int j0 = (int)((rot + level) % (uint)dim);
    while (hi > lo) {
        if (hi - lo < 16) {
            kd_sel_insertion(pts, rows, dim, level, j0, lo, hi);
            return;
        }
        const ulong mid = lo + (hi - lo) / 2;
        if (hi - lo > 1024) { /* Tukey's ninther, for the long top-level ranges */
            const ulong e = (hi - lo) / 8;
            kd_sel_median_to(pts, rows, dim, level, j0, lo + 1, lo + 1, lo + e, lo + 2 * e);
            kd_sel_median_to(pts, rows, dim, level, j0, mid, mid - e, mid, mid + e);
            kd_sel_median_to(pts, rows, dim, level, j0, hi, hi - 2 * e, hi - e, hi);
            kd_sel_median_to(pts, rows, dim, level, j0, lo, lo + 1, mid, hi);
        } else {
            kd_sel_median_to(pts, rows, dim, level, j0, lo, lo, mid, hi);
        }
        ulong i = lo + 1, j = hi;
        for (;;) {
            while (i < hi && KD_SEL_LESS(i, lo))
                i++;
            while (KD_SEL_LESS(lo, j))
                j--;
            if (i >= j)
                break;
            kd_sel_swap(pts, rows, dim, i, j);
            i++;
            j--;
        }
        kd_sel_swap(pts, rows, dim, lo, j);
        if (j == k)
            return;
        if (k < j)
            hi = j - 1;
        else
            lo = j + 1;
    }
}

/* Node s (of `level`): its range [*a, *a + size) of the work array, found
 * by walking down from the root. */
static inline ulong kd_sel_range(ulong s, ulong n, uint levels, uint level)
{
    ulong a = 0, node = 0;
    for (uint l = 0; l < level; l++) {
        const ulong left = 2 * node + 1;
        const uint bit = level - 1 - l;
        if (((s + 1) >> bit) & 1) { /* right child */
            a += lbk_kd_subtree_size(left, n, levels) + 1;
            node = left + 1;
        } else {
            node = left;
        }
    }
    return a;
}

/* Copy [a, a + count) of the work array from one copy to the other. */
static inline void kd_sel_copy(__global const float *sp, __global const uint *sr,
                               __global float *dp, __global uint *dr, int dim, ulong a,
                               ulong count)
{
    for (ulong i = a; i < a + count; i++) {
        dr[i] = sr[i];
        for (int j = 0; j < dim; j++)
            dp[i * (ulong)dim + (ulong)j] = sp[i * (ulong)dim + (ulong)j];
    }
}

#define KD_SEL_SHORT 32

/* Move [a, a + size) from (sp, sr) to (dp, dr) with the element of rank k
 * (in level `level`'s order) at a + k, the smaller ones before it and the
 * larger after. A quickselect's compares are coin flips the branch
 * predictor loses; instead one radix pass splits the range by 8 bits of
 * the primary key (the top 8 of the bits that differ in the range), with
 * no data-dependent branch, and only the bucket holding rank k (about
 * 1/256 of it on spread data) is selected by compares. Keys all equal
 * (ties in the primary coordinate) leave the whole range to the compares,
 * which break ties by the other coordinates and the row. */
static inline void kd_sel_split(__global const float *sp, __global const uint *sr,
                                __global float *dp, __global uint *dr, int dim, uint level,
                                uint rot, ulong a, ulong size, ulong k)
{
    const int j0 = (int)((rot + level) % (uint)dim);
    uint lo = 0xffffffffu, hi = 0;
    for (ulong i = a; i < a + size; i++) {
        const uint key = kd_flip(sp[i * (ulong)dim + (ulong)j0]);
        lo = min(lo, key);
        hi = max(hi, key);
    }
    if (size <= KD_SEL_SHORT || lo == hi) {
        kd_sel_copy(sp, sr, dp, dr, dim, a, size);
        kd_sel_nth(dp, dr, dim, level, rot, a, a + size - 1, a + k);
        return;
    }
    const int top = 31 - (int)clz(lo ^ hi);
    const uint shift = top >= 7 ? (uint)(top - 7) : 0u;
    uint h[256];
    for (int d = 0; d < 256; d++)
        h[d] = 0;
    for (ulong i = a; i < a + size; i++)
        h[(kd_flip(sp[i * (ulong)dim + (ulong)j0]) >> shift) & 255u]++;
    uint bucket = 0;
    ulong before = 0;
    while (before + h[bucket] <= k)
        before += h[bucket++];
    const uint pick = bucket;
    ulong less = a, same = a + before, more = a + size;
    for (ulong i = a; i < a + size; i++) {
        const uint d = (kd_flip(sp[i * (ulong)dim + (ulong)j0]) >> shift) & 255u;
        /* Arithmetic, not branches: the side is a coin flip the branch
         * predictor would lose on every point (10 % of the build). */
        const ulong lt = d<pick, gt = d> pick, eq = 1 - lt - gt;
        more -= gt;
        const ulong to = lt * less + eq * same + gt * more;
        less += lt;
        same += eq;
        dr[to] = sr[i];
        for (int j = 0; j < dim; j++)
            dp[to * (ulong)dim + (ulong)j] = sp[i * (ulong)dim + (ulong)j];
    }
    kd_sel_nth(dp, dr, dim, level, rot, a + before, a + before + h[pick] - 1, a + k);
}

/* Split node s (of `level`) whose range starts at a and lies in copy
 * `from` of the work array; its pivot to slot s of the tree. Returns the
 * copy its children's ranges are in: the other one, or (a short range,
 * when in_place) the same, split in place without the copy. The level
 * kernel never splits in place, so that level l always reads copy
 * l mod 2. */
static inline int kd_sel_node(__global float *p0, __global uint *r0, __global float *p1,
                              __global uint *r1, int dim, ulong n, uint levels, uint level,
                              uint rot, ulong s, ulong a, int from, bool in_place,
                              __global float *tree, __global uint *ids)
{
    const ulong size = lbk_kd_subtree_size(s, n, levels);
    const ulong k = lbk_kd_subtree_size(2 * s + 1, n, levels);
    const int to = in_place && size <= KD_SEL_SHORT ? from : 1 - from;
    __global float *sp = from ? p1 : p0, *dp = to ? p1 : p0;
    __global uint *sr = from ? r1 : r0, *dr = to ? r1 : r0;
    if (to == from && size > 1)
        kd_sel_nth(dp, dr, dim, level, rot, a, a + size - 1, a + k);
    else if (to != from)
        kd_sel_split(sp, sr, dp, dr, dim, level, rot, a, size, k);
    ids[s] = dr[a + k];
    for (int j = 0; j < dim; j++)
        tree[s * (ulong)dim + (ulong)j] = dp[(a + k) * (ulong)dim + (ulong)j];
    return to;
}

/* One work-item per node of `level`. */
__kernel void kd_sel_level(__global float *p0, __global uint *r0, __global float *p1,
                           __global uint *r1, int dim, ulong n, uint levels, uint level, uint rot,
                           __global float *tree, __global uint *ids)
{
    const ulong first = ((ulong)1 << level) - 1;
    const ulong s = first + get_global_id(0);
    if (s >= n || s > 2 * first)
        return;
#ifdef KD_SEL_DIM
    dim = KD_SEL_DIM; /* built for this dimension: constant loop bounds once inlined */
#endif
    kd_sel_node(p0, r0, p1, r1, dim, n, levels, level, rot, s, kd_sel_range(s, n, levels, level),
                (int)(level & 1u), false, tree, ids);
}

#define KD_SEL_STACK 64

/* One work-item per node of `level`: its whole subtree, depth first (the
 * subtree's points stay in the core's cache). */
__kernel void kd_sel_subtree(__global float *p0, __global uint *r0, __global float *p1,
                             __global uint *r1, int dim, ulong n, uint levels, uint level,
                             uint rot, __global float *tree, __global uint *ids)
{
    const ulong first = ((ulong)1 << level) - 1;
    const ulong root = first + get_global_id(0);
    if (root >= n || root > 2 * first)
        return;
#ifdef KD_SEL_DIM
    dim = KD_SEL_DIM;
#endif
    /* Per entry: the node, its range's start, its level and its copy. */
    ulong stack_s[KD_SEL_STACK], stack_a[KD_SEL_STACK];
    uint stack_l[KD_SEL_STACK];
    int stack_c[KD_SEL_STACK];
    int top = 0;
    stack_s[0] = root;
    stack_a[0] = kd_sel_range(root, n, levels, level);
    stack_l[0] = level;
    stack_c[0] = (int)(level & 1u);
    while (top >= 0) {
        const ulong s = stack_s[top], a = stack_a[top];
        const uint l = stack_l[top];
        const int from = stack_c[top];
        top--;
        const int c =
            kd_sel_node(p0, r0, p1, r1, dim, n, levels, l, rot, s, a, from, true, tree, ids);
        const ulong left = 2 * s + 1, right = left + 1;
        if (right < n) {
            top++;
            stack_s[top] = right;
            stack_a[top] = a + lbk_kd_subtree_size(left, n, levels) + 1;
            stack_l[top] = l + 1;
            stack_c[top] = c;
        }
        if (left < n) {
            top++;
            stack_s[top] = left;
            stack_a[top] = a;
            stack_l[top] = l + 1;
            stack_c[top] = c;
        }
    }
}

__kernel void kd_sel_init(__global uint *rows, ulong n)
{
    const ulong i = get_global_id(0);
    if (i < n)
        rows[i] = (uint)i;
}
