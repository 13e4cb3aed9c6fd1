/* Brute-force radius search: one work-item per query walks the rows of the
 * shard's chunk on the device in ascending order, each key the fixed-order
 * sum of lbk_key_step (the kNN kernels' key, bit for bit), and counts
 * (mode 0) or writes (mode 1) the rows whose key is <= the query's bound.
 * `found` carries each query's running count from chunk to chunk (from 0 at
 * the first), so the i-th row inside (in row order) has flat position
 * offsets[q] + i; the fill writes only the positions in [w0, w1), as a code
 * (lbk_radius_code), and an output of any size goes through a window of
 * w1 - w0 entries. A list is sorted by its work-item after the last chunk
 * where it is short and wholly in the window (lbk_radius_sort_list), by the
 * host otherwise. `refs` is the engine's layout: blocked ([block][dim][vw],
 * vw > 0) or row-major (vw = 0); `first` its buffer row of the chunk's first
 * row, `row0` that row's shard row. */
__kernel void br_radius(__global const float *refs, uint vw, ulong first, uint nr, uint row0,
                        int dim, __global const float *queries, ulong nq,
                        __global const float *bounds, int metric, int mode, int first_chunk,
                        int last_chunk, __global uint *found, __global const ulong *offsets,
                        ulong w0, ulong w1, __global ulong *out_codes, int filtered,
                        __global const float *lower, ulong ldd)
{
    const ulong q = get_global_id(0);
    if (q >= nq)
        return;
    if (mode == 1 && (offsets[q + 1] <= w0 || offsets[q] >= w1))
        return;
    __global const float *x = queries + q * (ulong)dim;
    const float bound = bounds[q];
    uint n = first_chunk ? 0u : found[q];
    const ulong base = mode == 1 ? offsets[q] : 0;
    __global const float *low = lower + q * ldd;
    /* Dimension j of buffer row first + i is at start + j * stride: row by
     * row, lane by lane in a block (`first` is a block's first row), with
     * no division (Oclgrind's uninitialised-value check cannot follow the
     * `freeze` LLVM gives a division and remainder by vw). */
    const ulong stride = vw ? vw : 1;
    ulong block_start = first * (ulong)dim;
    uint lane = 0;
    for (uint i = 0; i < nr; i++) {
        const ulong start = block_start + lane;
        if (vw == 0) {
            block_start += (ulong)dim;
        } else if (++lane == vw) {
            lane = 0;
            block_start += (ulong)dim * vw;
        }
        if (filtered && low[i] > bound)
            continue;
        float s = 0.0f;
        for (int j = 0; j < dim; j++)
            s = lbk_key_step(s, x[j], refs[start + (ulong)j * stride], metric);
        const float key = lbk_key_finish(s, metric);
        if (!(key <= bound))
            continue;
        const ulong g = base + n++;
        if (mode == 1 && g >= w0 && g < w1) {
            out_codes[g - w0] = lbk_radius_code(key, row0 + i);
        }
    }
    found[q] = n;
    if (mode == 1 && last_chunk && base >= w0 && base + n <= w1 && n <= LBK_RADIUS_SORT_MAX)
        lbk_radius_sort_list(out_codes + (base - w0), n);
}
