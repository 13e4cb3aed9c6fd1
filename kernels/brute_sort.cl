/* Selection for large K (src/engines/brute.c uses it above the bubble's
 * range): the same two kernels as the parallel bubble of brute.cl - the K
 * best of each group of a distance row, then the K best of a query's group
 * survivors (and of earlier chunks) - with a threshold filter and sorted
 * merges instead of a K-long pipeline, so the cost grows as K log^2 K per
 * merge instead of K per element.
 *
 * A work-group keeps, in its region of a global scratch buffer, a sorted
 * list `best` of KP2 >= K slots (a power of two; slots past K are pads or
 * spare candidates) and a buffer `buf` of KP2 slots. Stream elements smaller
 * than the current K-th best are appended to buf (any order: the result is a
 * set under a total order). When buf might overflow, and at the end, it is
 * padded, bitonic-sorted, and merged into best: best[i] = min(best[i],
 * buf[KP2-1-i]) keeps the KP2 smallest of both as a bitonic sequence, which
 * KP2-long half-cleaners sort. Global memory, not local: K = 4096 needs
 * 64 KiB per work-group, more than most GPUs' local memory.
 *
 * Compile-time parameters (set by src/engines/brute.c):
 *   LBK_K     neighbours per query
 *   LBK_KP2   the smallest power of two >= LBK_K (at least 2)
 *   LBK_SW    work-items per work-group
 *   LBK_SCAN  stream elements each work-item filters per block; a block
 *             (LBK_SW * LBK_SCAN elements) is at most LBK_KP2 / 2
 *
 * Candidates are ordered by lbk_candidate_less (lbk_shared.h): (key, index),
 * pads (+inf, LBK_NO_INDEX) last. */

#define LBK_SL (LBK_SW * LBK_SCAN)
#define LBK_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* Element p of a stream of n0 listed candidates (k0, i0), then k1 with
 * indices i1, or base + position when i1 is null (a row of the distance
 * matrix); as lbk_fetch in brute.cl. */
inline void lbk_sort_fetch(__global const float *k0, __global const uint *i0, const uint n0,
                           __global const float *k1, __global const uint *i1, const uint base,
                           uint p, float *key, uint *index)
{
    if (p < n0) {
        *key = k0[p];
        *index = i0[p];
        return;
    }
    p -= n0;
    *key = k1[p];
    *index = i1 ? i1[p] : base + p;
}

/* Slots a and b (a < b) in order: ascending when up. */
inline void lbk_sort_exchange(__global float *k, __global uint *x, const uint a, const uint b,
                              const bool up)
{
    const float ka = k[a], kb = k[b];
    const uint xa = x[a], xb = x[b];
    if (lbk_candidate_less(kb, xb, ka, xa) == up) {
        k[a] = kb;
        x[a] = xb;
        k[b] = ka;
        x[b] = xa;
    }
}

/* Sort buf ascending (a bitonic network over KP2 slots). */
inline void lbk_sort_buffer(__global float *k, __global uint *x)
{
    const uint t = get_local_id(0);
    for (uint size = 2; size <= LBK_KP2; size <<= 1)
        for (uint stride = size >> 1; stride > 0; stride >>= 1) {
            for (uint e = t; e < LBK_KP2 / 2; e += LBK_SW) {
                const uint a = 2 * e - (e & (stride - 1));
                lbk_sort_exchange(k, x, a, a + stride, (a & size) == 0);
            }
            barrier(LBK_FENCE);
        }
}

/* best = the KP2 smallest of best and buf (both sorted ascending), sorted. */
inline void lbk_sort_merge(__global float *bk, __global uint *bx, __global const float *fk,
                           __global const uint *fx)
{
    const uint t = get_local_id(0);
    for (uint i = t; i < LBK_KP2; i += LBK_SW) {
        const float k = fk[LBK_KP2 - 1 - i];
        const uint x = fx[LBK_KP2 - 1 - i];
        if (lbk_candidate_less(k, x, bk[i], bx[i])) {
            bk[i] = k;
            bx[i] = x;
        }
    }
    barrier(LBK_FENCE);
    for (uint stride = LBK_KP2 >> 1; stride > 0; stride >>= 1) {
        for (uint e = t; e < LBK_KP2 / 2; e += LBK_SW) {
            const uint a = 2 * e - (e & (stride - 1));
            lbk_sort_exchange(bk, bx, a, a + stride, true);
        }
        barrier(LBK_FENCE);
    }
}

/* The buffer's n candidates into best; the new threshold (the K-th best). */
inline void lbk_sort_flush(__global float *bk, __global uint *bx, __global float *fk,
                           __global uint *fx, const uint n, __local float *thr_k,
                           __local uint *thr_i)
{
    const uint t = get_local_id(0);
    for (uint i = n + t; i < LBK_KP2; i += LBK_SW) {
        fk[i] = INFINITY;
        fx[i] = LBK_NO_INDEX;
    }
    barrier(LBK_FENCE);
    lbk_sort_buffer(fk, fx);
    lbk_sort_merge(bk, bx, fk, fx);
    if (t == 0) {
        *thr_k = bk[LBK_K - 1];
        *thr_i = bx[LBK_K - 1];
    }
    barrier(LBK_FENCE);
}

/* The K smallest of a stream of n elements (see lbk_sort_fetch) into
 * out; scratch is this work-group's 2 * KP2 slots (best, then buf). */
inline void lbk_sort_run(__global const float *k0, __global const uint *i0, const uint n0,
                         __global const float *k1, __global const uint *i1, const uint base,
                         const uint n, __global float *out_k, __global uint *out_i,
                         __global float *sk, __global uint *sx, __local uint *fill,
                         __local float *thr_k, __local uint *thr_i)
{
    const uint t = get_local_id(0);
    __global float *bk = sk, *fk = sk + LBK_KP2;
    __global uint *bx = sx, *fx = sx + LBK_KP2;
    for (uint i = t; i < LBK_KP2; i += LBK_SW) {
        bk[i] = INFINITY;
        bx[i] = LBK_NO_INDEX;
    }
    if (t == 0) {
        *fill = 0;
        *thr_k = INFINITY;
        *thr_i = LBK_NO_INDEX;
    }
    barrier(LBK_FENCE);
    for (uint lo = 0; lo < n; lo += LBK_SL) {
        const float tk = *thr_k;
        const uint ti = *thr_i;
        for (uint s = 0; s < LBK_SCAN; s++) {
            const uint p = lo + s * LBK_SW + t;
            float key;
            uint index;
            if (p < n) {
                lbk_sort_fetch(k0, i0, n0, k1, i1, base, p, &key, &index);
                if (lbk_candidate_less(key, index, tk, ti)) {
                    const uint slot = atomic_inc(fill);
                    fk[slot] = key;
                    fx[slot] = index;
                }
            }
        }
        barrier(LBK_FENCE);
        const uint m = *fill;
        /* Room for the next block, or the end: merge what is buffered. */
        if (m > LBK_KP2 - LBK_SL || (lo + LBK_SL >= n && m > 0)) {
            lbk_sort_flush(bk, bx, fk, fx, m, thr_k, thr_i);
            if (t == 0)
                *fill = 0;
        }
        barrier(LBK_FENCE);
    }
    for (uint i = t; i < LBK_K; i += LBK_SW) {
        out_k[i] = bk[i];
        out_i[i] = bx[i];
    }
}

/* Work-group (g, q): group g of row q of the distance matrix (as
 * lbk_bubble_groups); scratch region (q * groups + g). */
__kernel __attribute__((reqd_work_group_size(LBK_SW, 1, 1))) void
lbk_sort_groups(__global const float *dist, const ulong ldd, const uint nr, const uint group_len,
                const uint base, __global float *surv_k, __global uint *surv_i,
                __global float *scr_k, __global uint *scr_i)
{
    __local uint fill;
    __local float thr_k;
    __local uint thr_i;
    const uint g = get_group_id(0), q = get_group_id(1), groups = get_num_groups(0);
    const uint lo = min(g * group_len, nr);
    const uint hi = min(lo + group_len, nr);
    const ulong region = (ulong)q * groups + g;
    const ulong out = region * LBK_K, scr = region * 2 * LBK_KP2;
    lbk_sort_run(0, 0, 0, dist + (ulong)q * ldd + lo, 0, base + lo, hi - lo, surv_k + out,
                 surv_i + out, scr_k + scr, scr_i + scr, &fill, &thr_k, &thr_i);
}

/* Work-group q: the K smallest of best[q] (when use_prev) and the `count`
 * survivors of row q, written over best[q] (as lbk_bubble_final; best[q] is
 * read before it is written); scratch region q. */
__kernel __attribute__((reqd_work_group_size(LBK_SW, 1, 1))) void
lbk_sort_final(__global const float *surv_k, __global const uint *surv_i, const uint count,
               const uint use_prev, __global float *best_k, __global uint *best_i,
               __global float *scr_k, __global uint *scr_i)
{
    __local uint fill;
    __local float thr_k;
    __local uint thr_i;
    const uint q = get_group_id(1);
    const uint n0 = use_prev ? LBK_K : 0;
    const ulong row = (ulong)q * count, out = (ulong)q * LBK_K, scr = (ulong)q * 2 * LBK_KP2;
    lbk_sort_run(best_k + out, best_i + out, n0, surv_k + row, surv_i + row, 0, n0 + count,
                 best_k + out, best_i + out, scr_k + scr, scr_i + scr, &fill, &thr_k, &thr_i);
}
