/* The CUKNN-style full-sort selection (the benchmarks' baseline for the
 * brute engine's parallel bubble; see bench/cuknn_baseline.h): every block of
 * S candidates is bitonic-sorted in local memory and keeps its K smallest,
 * until one block holds them all. Built by bench/cuknn_baseline.c with
 * lbk_shared.h in front (the candidate order) and:
 *   LBK_K          neighbours per query
 *   LBK_SORT_S     block (power of two >= max(256, 2K))
 *   LBK_SORT_W     work-items per block (<= S/2) */

/* Bitonic sort of the block in local memory (filled by the caller; the
 * barrier after the fill is here); the K smallest go to out. */
inline void cuknn_sort_block(__local float *sk, __local uint *sx, __global float *out_k,
                             __global uint *out_i)
{
    const uint t = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint size = 2; size <= LBK_SORT_S; size <<= 1) {
        for (uint stride = size >> 1; stride > 0; stride >>= 1) {
            for (uint p = t; p < LBK_SORT_S / 2; p += LBK_SORT_W) {
                const uint i = 2 * p - (p & (stride - 1));
                const uint j = i + stride;
                const bool ascending = (i & size) == 0;
                const bool swap = ascending ? lbk_candidate_less(sk[j], sx[j], sk[i], sx[i])
                                            : lbk_candidate_less(sk[i], sx[i], sk[j], sx[j]);
                if (swap) {
                    const float tk = sk[i];
                    const uint ti = sx[i];
                    sk[i] = sk[j];
                    sx[i] = sx[j];
                    sk[j] = tk;
                    sx[j] = ti;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (uint e = t; e < LBK_K; e += LBK_SORT_W) {
        out_k[e] = sk[e];
        out_i[e] = sx[e];
    }
}

/* Work-group (b, q): block b (S columns) of row q of the distance matrix;
 * column c is reference base + c. */
__kernel __attribute__((reqd_work_group_size(LBK_SORT_W, 1, 1))) void
lbk_sort_matrix(__global const float *dist, const ulong ldd, const uint nr, const uint base,
                __global float *out_k, __global uint *out_i)
{
    __local float sk[LBK_SORT_S];
    __local uint sx[LBK_SORT_S];
    const uint b = get_group_id(0), q = get_group_id(1), blocks = get_num_groups(0);
    __global const float *row = dist + (ulong)q * ldd;
    const uint lo = b * LBK_SORT_S;
    for (uint e = get_local_id(0); e < LBK_SORT_S; e += LBK_SORT_W) {
        const bool real = lo + e < nr;
        sk[e] = real ? row[lo + e] : INFINITY;
        sx[e] = real ? base + lo + e : LBK_NO_INDEX;
    }
    const ulong out = ((ulong)q * blocks + b) * LBK_K;
    cuknn_sort_block(sk, sx, out_k + out, out_i + out);
}

/* Work-group (b, q): block b of the stream (best[q] when use_prev, then the
 * `count` candidates of row q of in); block b's K smallest go to row q of out
 * (stride blocks * K). With use_prev there is exactly one block and out may be
 * best itself: everything is read before the first barrier. */
__kernel __attribute__((reqd_work_group_size(LBK_SORT_W, 1, 1))) void
lbk_sort_lists(__global const float *in_k, __global const uint *in_i, const uint count,
               const uint use_prev, __global const float *best_k, __global const uint *best_i,
               __global float *out_k, __global uint *out_i)
{
    __local float sk[LBK_SORT_S];
    __local uint sx[LBK_SORT_S];
    const uint b = get_group_id(0), q = get_group_id(1), blocks = get_num_groups(0);
    const uint n0 = use_prev ? LBK_K : 0;
    const ulong row = (ulong)q * count, prev = (ulong)q * LBK_K;
    const uint lo = b * LBK_SORT_S;
    for (uint e = get_local_id(0); e < LBK_SORT_S; e += LBK_SORT_W) {
        const uint p = lo + e;
        float key = INFINITY;
        uint index = LBK_NO_INDEX;
        if (p < n0) {
            key = best_k[prev + p];
            index = best_i[prev + p];
        } else if (p < n0 + count) {
            key = in_k[row + p - n0];
            index = in_i[row + p - n0];
        }
        sk[e] = key;
        sx[e] = index;
    }
    const ulong out = ((ulong)q * blocks + b) * LBK_K;
    cuknn_sort_block(sk, sx, out_k + out, out_i + out);
}
