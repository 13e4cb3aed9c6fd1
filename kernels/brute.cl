/* PBKNN brute-force kernels (He et al. 2016): the distance kernels (tiled
 * in local memory for GPUs, blocked in vector lanes for CPUs), the grouped
 * parallel-bubble selection, the final K-of-G*K selection, and the
 * prefilter's bound kernel (its re-rank runs on the host:
 * src/engines/rerank.c). Large K selects with brute_sort.cl instead. (The
 * CUKNN-style full-sort baseline of the benchmarks is bench/cuknn_select.cl.)
 *
 * Compile-time parameters (set by src/engines/brute.c):
 *   LBK_METRIC          LBK_KERNEL_METRIC_*
 *   LBK_K               neighbours per query
 *   LBK_W, LBK_B        bubble work-items and bubbles per work-item (W*B >= K)
 *   LBK_SCAN            stream elements each bubble work-item filters per block
 *   LBK_LX, LBK_LY      distance work-group shape
 *   LBK_RB, LBK_QB      references (x) and queries (y) per distance work-item
 *   LBK_TD              dimensions staged per local-memory tile
 *   LBK_VW              blocked (CPU) distance kernel: lanes of its vectors
 *                       (4, 8 or 16 floats; the reference layout's block rows)
 *   LBK_VQB, LBK_VRB    blocked kernel: queries and LBK_VW-row reference
 *                       blocks of its register block
 *   LBK_QT, LBK_KC      blocked kernel: query blocks per work-item (most)
 *                       and dimensions per slice
 *   LBK_REF             the reference points' type: LBK_REF_F32 (default),
 *                       LBK_REF_U8, LBK_REF_I8 (exact int32 keys, coded:
 *                       lbk_int_key_code; L2 and IP also by the dot path,
 *                       lbk_brute_dot_blocked) or LBK_REF_F16 (vload_half,
 *                       then float32 as for float32 points; the prefilter's
 *                       bound kernel too). Cosine over float16 (LBK_SCALED)
 *                       normalises each value on the fly with its row's
 *                       factors (lbk_scale_row)
 *
 * Candidates are ordered by lbk_candidate_less (lbk_shared.h): (key, index),
 * pads (+inf, LBK_NO_INDEX) last. */

#define LBK_TR (LBK_LX * LBK_RB)
#define LBK_TQ (LBK_LY * LBK_QB)
#define LBK_L (LBK_W * LBK_SCAN)

/* The blocked kernel's vector type and its loads and stores, LBK_VW lanes. */
#define LBK_CAT_(a, b) a##b
#define LBK_CAT(a, b) LBK_CAT_(a, b)
#define floatv LBK_CAT(float, LBK_VW)
#define vloadv LBK_CAT(vload, LBK_VW)
#define vstorev LBK_CAT(vstore, LBK_VW)

#define LBK_REF_F32 0
#define LBK_REF_U8 1
#define LBK_REF_I8 2
#define LBK_REF_F16 3
#ifndef LBK_REF
#define LBK_REF LBK_REF_F32
#endif
#define LBK_INT_KEYS (LBK_REF == LBK_REF_U8 || LBK_REF == LBK_REF_I8)
/* Cosine over float16 points: the rows stay as read, and each value x of row
 * r becomes fma(x, hi_r, x * lo_r), which src/engines/brute_scale.c checked
 * at set-up to equal the normaliser's (float)(x / |r|) for every value of
 * the row (docs/design.md "Compact reference points"). rscale holds, per
 * block of LBK_VW rows, their hi then their lo factors. */
#if LBK_REF == LBK_REF_F16 && LBK_METRIC == LBK_KERNEL_METRIC_COSINE
#define LBK_SCALED 1
#else
#define LBK_SCALED 0
#endif

/* The references' storage type, and a value or LBK_VW lanes of them as the
 * accumulators' type (lbk_acc, accv): int for uint8 and int8 (exact), float
 * otherwise (float16 converts exactly). A query value is an integer within
 * the points' range where the keys are integers (the host checked it), so
 * its conversion is exact too. */
#if LBK_INT_KEYS
typedef int lbk_acc;
#define accv LBK_CAT(int, LBK_VW)
#define LBK_ACC_OF(x) ((lbk_acc)(x))
#if LBK_REF == LBK_REF_U8
typedef uchar lbk_ref_t;
#else
typedef char lbk_ref_t;
#endif
#define lbk_ref_load(p, i) ((lbk_acc)(p)[i])
#define lbk_ref_loadv(p) LBK_CAT(convert_, accv)(vloadv(0, p))
#else
typedef float lbk_acc;
#define accv floatv
#define LBK_ACC_OF(x) (x)
#if LBK_REF == LBK_REF_F16
typedef half lbk_ref_t;
#define lbk_ref_load(p, i) vload_half(i, p)
#define lbk_ref_loadv(p) LBK_CAT(vload_half, LBK_VW)(0, p)
#else
typedef float lbk_ref_t;
#define lbk_ref_load(p, i) (p)[i]
#define lbk_ref_loadv(p) vloadv(0, p)
#endif
#endif

/* The key step and finish of lbk_shared.h, on scalars and on vector lanes
 * (the blocked kernel). Integer keys finish as their codes. */
#if LBK_INT_KEYS
LBK_DEFINE_INT_KEY_STEP(lbk_acc_step, lbk_acc)
LBK_DEFINE_INT_KEY_STEP(lbk_key_stepv, accv)

inline float lbk_acc_finish(const lbk_acc s, const int metric)
{
    const int k = convert_int(s);
    return lbk_int_key_code(lbk_metric_negates(metric) ? -k : k);
}

inline floatv lbk_key_finishv(const accv s, const int metric)
{
    const LBK_CAT(int, LBK_VW) k0 = LBK_CAT(convert_int, LBK_VW)(s);
    const LBK_CAT(int, LBK_VW) k = lbk_metric_negates(metric) ? -k0 : k0;
    const LBK_CAT(uint, LBK_VW) m =
        LBK_CAT(as_uint, LBK_VW)(select(k, -k, k < 0)) + LBK_INT_KEY_BIAS;
    return LBK_CAT(as_float, LBK_VW)(select(m, m | 0x80000000u, k < 0));
}
#else
#define lbk_acc_step lbk_key_step
#define lbk_acc_finish lbk_key_finish
LBK_DEFINE_KEY_STEP(lbk_key_stepv, floatv)

inline floatv lbk_key_finishv(const floatv s, const int metric)
{
    if (!lbk_metric_negates(metric))
        return s;
    return select(-s, (floatv)(INFINITY), isnan(s));
}
#endif

#if LBK_SCALED
inline float lbk_scale_row(const float x, __global const float *rscale, const ulong row)
{
    const ulong o = row / LBK_VW * 2 * LBK_VW + row % LBK_VW;
    return fma(x, rscale[o], x * rscale[o + LBK_VW]);
}
#else
#define lbk_scale_row(x, rscale, row) (x)
#endif

/* dist[q * ldd + r] = key(query q, reference r_first + r) for q < nq, r < nr.
 * Padding a tile with zeros in both operands adds exact zeros (and max with
 * 0 is a no-op, and so is a 0 * 0 product), so the dimension tail needs no
 * special case. */
__kernel __attribute__((reqd_work_group_size(LBK_LX, LBK_LY, 1))) void
lbk_brute_distance(__global const float *queries, const uint nq, __global const lbk_ref_t *refs,
                   const ulong r_first, const uint nr, const uint dim, __global float *dist,
                   const ulong ldd, __global const float *rscale, const ulong scale_first)
{
    __local lbk_acc qt[LBK_TQ][LBK_TD];
    __local lbk_acc rt[LBK_TD][LBK_TR];
    const uint lx = get_local_id(0), ly = get_local_id(1);
    const uint lid = ly * LBK_LX + lx;
    const uint r0 = get_group_id(0) * LBK_TR, q0 = get_group_id(1) * LBK_TQ;
    lbk_acc acc[LBK_QB][LBK_RB];
    for (int a = 0; a < LBK_QB; a++)
        for (int b = 0; b < LBK_RB; b++)
            acc[a][b] = 0;

    for (uint d0 = 0; d0 < dim; d0 += LBK_TD) {
        for (uint e = lid; e < LBK_TQ * LBK_TD; e += LBK_LX * LBK_LY) {
            const uint qq = e / LBK_TD, j = e % LBK_TD;
            const uint gq = q0 + qq, gj = d0 + j;
            qt[qq][j] = (gq < nq && gj < dim) ? LBK_ACC_OF(queries[(ulong)gq * dim + gj]) : 0;
        }
        for (uint e = lid; e < LBK_TR * LBK_TD; e += LBK_LX * LBK_LY) {
            const uint rr = e / LBK_TD, j = e % LBK_TD;
            const uint gr = r0 + rr, gj = d0 + j;
            rt[j][rr] = (gr < nr && gj < dim)
                            ? lbk_scale_row(lbk_ref_load(refs, (r_first + gr) * dim + gj), rscale,
                                            scale_first + gr)
                            : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < LBK_TD; j++) {
            lbk_acc r[LBK_RB];
            for (int b = 0; b < LBK_RB; b++)
                r[b] = rt[j][lx + b * LBK_LX];
            for (int a = 0; a < LBK_QB; a++) {
                const lbk_acc q = qt[ly + a * LBK_LY][j];
                for (int b = 0; b < LBK_RB; b++)
                    acc[a][b] = lbk_acc_step(acc[a][b], q, r[b], LBK_METRIC);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int a = 0; a < LBK_QB; a++) {
        const uint gq = q0 + ly + a * LBK_LY;
        for (int b = 0; b < LBK_RB; b++) {
            const uint gr = r0 + lx + b * LBK_LX;
            if (gq < nq && gr < nr)
                dist[(ulong)gq * ldd + gr] = lbk_acc_finish(acc[a][b], LBK_METRIC);
        }
    }
}

/* CPU variant of the distance kernel, blocked as a GEMM is for caches and
 * registers. References are stored in blocks of LBK_VW rows,
 * dimension-major inside a block ([block][dim][LBK_VW]), so one vector load
 * brings coordinate j of LBK_VW references and each vector lane keeps its
 * own pair's sequential sum: the exactness contract holds lane by lane,
 * whatever the lane count. A work-item owns LBK_VRB blocks of references and
 * up to LBK_QT blocks of LBK_VQB queries. Its register block is LBK_VQB
 * queries x LBK_VRB vectors of accumulators, sized per device so that it
 * fits the vector registers (src/engines/tuning.c). The dimensions are
 * walked in slices of LBK_KC: within a slice the work-item runs every query
 * block against the same LBK_VRB x LBK_KC reference values, which stay in
 * L1, and parks its accumulators in private memory between slices (a
 * pair's sum still runs over j in ascending order). Without the slices each
 * query block streamed the whole reference tile from L2 again, and the
 * kernel ran at 60 % of the FMA peak. Queries are not staged in local
 * memory: on a CPU device "local memory" is ordinary cached memory. */
#define LBK_MODE_EXACT 0
#define LBK_MODE_BOUND 1
#define LBK_MODE_DOT 2

/* The norms of the bound (float32 rows: float) and of the dot path (uint8,
 * int8: the exact int32 squared norms). */
#if LBK_INT_KEYS
typedef int lbk_norm_t;
#else
typedef float lbk_norm_t;
#endif

#if LBK_INT_KEYS
/* mode DOT (uint8, int8; L2 and IP): the exact integer key from the exact
 * dot product q.r (docs/design.md "Compact reference points"). Each product
 * q_j r_j is an integer of magnitude at most 255^2 (uint8) or 128^2 (int8),
 * so a float32 fused multiply-add sum over at most LBK_DOT_SPAN dimensions
 * never leaves the integers float32 holds (|s| <= 256 x 65025 = 16,646,400
 * and 1024 x 16384 = 2^24, both <= 2^24): every partial sum is exact in
 * any order. Each such sum is converted (exactly) and added to int32
 * accumulators; L2's key is then (|q|^2 - q.r) + (|r|^2 - q.r), IP's -q.r,
 * the very integers of the exact path's steps. */
#if LBK_REF == LBK_REF_U8
#define LBK_DOT_SPAN 256
#else
#define LBK_DOT_SPAN 1024
#endif
#define LBK_DOT_KC (LBK_KC < LBK_DOT_SPAN ? LBK_KC : LBK_DOT_SPAN)
#define convert_accv LBK_CAT(convert_, accv)
#define convert_floatv LBK_CAT(convert_float, LBK_VW)

/* One query block's float32 dot products over dimensions [d0, d1), d1 - d0
 * <= LBK_DOT_SPAN, from zero. */
inline void lbk_block_dot_slice(floatv acc[LBK_VQB][LBK_VRB], __global const float *qrow[LBK_VQB],
                                __global const lbk_ref_t *rblk, const uint dim, const uint d0,
                                const uint d1)
{
    for (uint j = d0; j < d1; j++) {
        floatv r[LBK_VRB];
#pragma unroll
        for (int b = 0; b < LBK_VRB; b++)
            r[b] = convert_floatv(vloadv(0, rblk + ((ulong)b * dim + j) * LBK_VW));
#pragma unroll
        for (int a = 0; a < LBK_VQB; a++) {
            const floatv q = (floatv)(qrow[a][j]);
#pragma unroll
            for (int b = 0; b < LBK_VRB; b++)
                acc[a][b] = fma(q, r[b], acc[a][b]);
        }
    }
}

/* The key of a dot product: L2's from the squared norms, IP's -dot (in
 * lbk_key_finishv). No int32 wraps up to LBK_INT_KEY_DIM_MAX: |q.r|,
 * |q|^2 and |r|^2 are at most dim x 255^2 (both in [0, dim x 255^2] for
 * uint8), so |q|^2 - q.r lies in [-dim x 255^2, dim x 255^2], and the sum
 * is the exact key, at most dim x 255^2. */
inline floatv lbk_dot_keyv(const accv dot, const lbk_acc qn, const accv rn)
{
    if (lbk_metric_negates(LBK_METRIC))
        return lbk_key_finishv(dot, LBK_METRIC);
    return lbk_key_finishv(((accv)(qn)-dot) + (rn - dot), LBK_METRIC);
}
#endif

/* Columns r0 .. r0 + LBK_VW - 1 of a distance row, those below nr. */
inline void lbk_storev(__global float *row, const uint r0, const uint nr, const floatv key)
{
    if (r0 + LBK_VW <= nr) {
        vstorev(key, 0, row + r0);
        return;
    }
    float lanes[LBK_VW];
    vstorev(key, 0, lanes);
    for (uint l = 0; l < LBK_VW && r0 + l < nr; l++)
        row[r0 + l] = lanes[l];
}

/* mode EXACT: the exact key. mode BOUND (prefilter): a lower bound of the
 * exact key from the dot product q.r, which may use fused multiply-adds in
 * any order: for L2 (|q|^2 + |r|^2 - 2 q.r) - c (|q|^2 + |r|^2) with squared
 * norms in qnorm/rnorm, for IP and COSINE -q.r - c |q| |r| with norms. The
 * dot product's error, and the exact key's own rounding, are covered by c
 * (see src/engines/brute.c, prefilter_bound). */
#if !LBK_INT_KEYS
inline floatv lbk_boundv(const floatv dot, const float qn, const floatv rn, const float bound_c)
{
    if (lbk_metric_negates(LBK_METRIC))
        return -dot - bound_c * ((floatv)(qn)*rn);
    const floatv norms = (floatv)(qn) + rn;
    return (norms - 2.0f * dot) - bound_c * norms;
}
#endif

/* One query block's accumulators over dimensions [d0, d1). sblk: the
 * blocks' row factors (LBK_SCALED), applied to exact keys only: the bound
 * scales the dot product once (lbk_block_store). Always inlined: PoCL left
 * the float16 variant a call, its accumulators in memory, at half the
 * speed of the float32 one. */
__attribute__((always_inline)) inline void
lbk_block_slice(const int mode, accv acc[LBK_VQB][LBK_VRB], __global const float *qrow[LBK_VQB],
                __global const lbk_ref_t *rblk, __global const float *sblk, const uint dim,
                const uint d0, const uint d1)
{
#if LBK_SCALED
    floatv hi[LBK_VRB], lo[LBK_VRB];
    for (int b = 0; b < LBK_VRB; b++) {
        hi[b] = vloadv(0, sblk + (ulong)b * 2 * LBK_VW);
        lo[b] = vloadv(0, sblk + ((ulong)b * 2 + 1) * LBK_VW);
    }
#endif
    for (uint j = d0; j < d1; j++) {
        accv r[LBK_VRB];
#pragma unroll
        for (int b = 0; b < LBK_VRB; b++) {
            r[b] = lbk_ref_loadv(rblk + ((ulong)b * dim + j) * LBK_VW);
#if LBK_SCALED
            if (mode == LBK_MODE_EXACT)
                r[b] = fma(r[b], hi[b], r[b] * lo[b]);
#endif
        }
#pragma unroll
        for (int a = 0; a < LBK_VQB; a++) {
            const lbk_acc q = LBK_ACC_OF(qrow[a][j]);
#pragma unroll
            for (int b = 0; b < LBK_VRB; b++) {
#if !LBK_INT_KEYS
                if (mode == LBK_MODE_BOUND)
                    acc[a][b] = fma((floatv)(q), r[b], acc[a][b]);
                else
#endif
                    acc[a][b] = lbk_key_stepv(acc[a][b], (accv)(q), r[b], LBK_METRIC);
            }
        }
    }
}

/* Query block s's keys (or bounds) into its distance rows. */
inline void lbk_block_store(const int mode, accv part[LBK_VQB][LBK_VRB], const uint q0,
                            const uint nq, const uint b0, const uint nr, __global float *dist,
                            const ulong ldd, __global const lbk_norm_t *qnorm,
                            __global const lbk_norm_t *rnorm, __global const float *rscale,
                            const ulong norm_first, const float bound_c)
{
    for (int a = 0; a < LBK_VQB; a++) {
        if (q0 + a >= nq)
            break;
        __global float *row = dist + (ulong)(q0 + a) * ldd;
        for (int b = 0; b < LBK_VRB; b++) {
            floatv key = lbk_key_finishv(part[a][b], LBK_METRIC);
#if !LBK_INT_KEYS
            if (mode == LBK_MODE_BOUND) {
                floatv dot = part[a][b];
#if LBK_SCALED
                dot = dot * vloadv(0, rscale + (norm_first + b0 + b) * 2 * LBK_VW);
#endif
                key = lbk_boundv(dot, qnorm[q0 + a],
                                 vloadv(0, rnorm + (norm_first + b0 + b) * LBK_VW), bound_c);
            }
#endif
#if LBK_INT_KEYS
            if (mode == LBK_MODE_DOT)
                key =
                    lbk_dot_keyv(part[a][b], (lbk_acc)qnorm[q0 + a],
                                 convert_accv(vloadv(0, rnorm + (norm_first + b0 + b) * LBK_VW)));
#endif
            lbk_storev(row, (b0 + b) * LBK_VW, nr, key);
        }
    }
}

/* Work-item (x, y): reference blocks x * LBK_VRB .., query blocks
 * y * qt .. (qt <= LBK_QT, chosen per launch). */
inline void lbk_blocked(const int mode, __global const float *queries, const uint nq,
                        __global const lbk_ref_t *refs, const ulong block_first, const uint nr,
                        const uint dim, __global float *dist, const ulong ldd,
                        __global const lbk_norm_t *qnorm, __global const lbk_norm_t *rnorm,
                        __global const float *rscale, const ulong norm_first, const float bound_c,
                        const uint qt)
{
    const uint b0 = get_global_id(0) * LBK_VRB;
    const uint first = get_global_id(1) * qt * LBK_VQB;
    if (first >= nq || b0 * LBK_VW >= nr)
        return;
    const uint blocks = min(qt, (nq - first + LBK_VQB - 1) / LBK_VQB);
    __global const lbk_ref_t *rblk = refs + (block_first + b0) * dim * LBK_VW;
    accv part[LBK_QT][LBK_VQB][LBK_VRB];
#if LBK_INT_KEYS
    const uint kc = mode == LBK_MODE_DOT ? (uint)LBK_DOT_KC : (uint)LBK_KC;
#else
    const uint kc = LBK_KC;
#endif
    for (uint d0 = 0; d0 < dim; d0 += kc) {
        const uint d1 = min(d0 + kc, dim);
        for (uint s = 0; s < blocks; s++) {
            const uint q0 = first + s * LBK_VQB;
            __global const float *qrow[LBK_VQB];
            accv acc[LBK_VQB][LBK_VRB];
#pragma unroll
            for (int a = 0; a < LBK_VQB; a++) {
                qrow[a] = queries + (ulong)min(q0 + a, nq - 1) * dim;
#pragma unroll
                for (int b = 0; b < LBK_VRB; b++)
                    acc[a][b] = d0 == 0 ? (accv)(0) : part[s][a][b];
            }
#if LBK_INT_KEYS
            if (mode == LBK_MODE_DOT) {
                floatv dot[LBK_VQB][LBK_VRB];
#pragma unroll
                for (int a = 0; a < LBK_VQB; a++)
#pragma unroll
                    for (int b = 0; b < LBK_VRB; b++)
                        dot[a][b] = (floatv)(0.0f);
                lbk_block_dot_slice(dot, qrow, rblk, dim, d0, d1);
#pragma unroll
                for (int a = 0; a < LBK_VQB; a++)
#pragma unroll
                    for (int b = 0; b < LBK_VRB; b++)
                        part[s][a][b] = acc[a][b] + convert_accv(dot[a][b]);
                continue;
            }
#endif
            lbk_block_slice(mode, acc, qrow, rblk, rscale + (norm_first + b0) * 2 * LBK_VW, dim,
                            d0, d1);
#pragma unroll
            for (int a = 0; a < LBK_VQB; a++)
#pragma unroll
                for (int b = 0; b < LBK_VRB; b++)
                    part[s][a][b] = acc[a][b];
        }
    }
    for (uint s = 0; s < blocks; s++)
        lbk_block_store(mode, part[s], first + s * LBK_VQB, nq, b0, nr, dist, ldd, qnorm, rnorm,
                        rscale, norm_first, bound_c);
}

__kernel void lbk_brute_distance_blocked(__global const float *queries, const uint nq,
                                         __global const lbk_ref_t *refs, const ulong block_first,
                                         const uint nr, const uint dim, __global float *dist,
                                         const ulong ldd, const uint qt,
                                         __global const float *rscale, const ulong norm_first)
{
    lbk_blocked(LBK_MODE_EXACT, queries, nq, refs, block_first, nr, dim, dist, ldd, 0, 0, rscale,
                norm_first, 0.0f, qt);
}

#if LBK_INT_KEYS
/* The dot path's exact keys (uint8, int8; L2 and IP): qnorm and rnorm are
 * the exact squared norms, rnorm the whole shard's (the chunk's first at
 * block norm_first). */
__kernel void lbk_brute_dot_blocked(__global const float *queries, const uint nq,
                                    __global const lbk_ref_t *refs, const ulong block_first,
                                    const uint nr, const uint dim, __global float *dist,
                                    const ulong ldd, __global const int *qnorm,
                                    __global const int *rnorm, const ulong norm_first,
                                    const uint qt)
{
    lbk_blocked(LBK_MODE_DOT, queries, nq, refs, block_first, nr, dim, dist, ldd, qnorm, rnorm, 0,
                norm_first, 0.0f, qt);
}
#endif

#if !LBK_INT_KEYS
/* The prefilter's lower bounds; rnorm (and rscale) hold the whole shard's,
 * the chunk's first at block norm_first (refs may hold only the chunk). */
__kernel void lbk_brute_bound_blocked(__global const float *queries, const uint nq,
                                      __global const lbk_ref_t *refs, const ulong block_first,
                                      const uint nr, const uint dim, __global float *dist,
                                      const ulong ldd, __global const float *qnorm,
                                      __global const float *rnorm, const ulong norm_first,
                                      const float bound_c, const uint qt,
                                      __global const float *rscale)
{
    lbk_blocked(LBK_MODE_BOUND, queries, nq, refs, block_first, nr, dim, dist, ldd, qnorm, rnorm,
                rscale, norm_first, bound_c, qt);
}
#endif

/* Element p of a stream made of two segments: n0 listed candidates (k0, i0),
 * then k1 with indices i1, or base + position when i1 is null (a row of the
 * distance matrix). */
inline void lbk_fetch(__global const float *k0, __global const uint *i0, const uint n0,
                      __global const float *k1, __global const uint *i1, const uint base, uint p,
                      float *key, uint *index)
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

inline void lbk_queue(const float key, const uint index, __local float *qk, __local uint *qx,
                      __local uint *qn)
{
    const uint slot = atomic_inc(qn);
    qk[slot] = key;
    qx[slot] = index;
}

#if LBK_SCAN % 16 == 0
/* A work-item's LBK_SCAN elements [p0, p0 + LBK_SCAN) of a plain distance
 * row (indices base + p) that beat the threshold (tk, ti), queued. Sixteen
 * at a time: once the bubbles hold K candidates almost no key reaches the
 * threshold, and a group of 16 with none <= tk (a necessary condition of
 * lbk_candidate_less) costs one vector compare. */
inline void lbk_filter_row(__global const float *row, const uint base, const uint p0,
                           const uint n, const float tk, const uint ti, __local float *qk,
                           __local uint *qx, __local uint *qn)
{
    const uint end = min(p0 + LBK_SCAN, n);
    uint p = p0;
    for (; p + 16 <= end; p += 16) {
        const float16 v = vload16(0, row + p);
        if (!any(islessequal(v, (float16)(tk))))
            continue;
        float lanes[16];
        vstore16(v, 0, lanes);
        for (uint l = 0; l < 16; l++)
            if (lbk_candidate_less(lanes[l], base + p + l, tk, ti))
                lbk_queue(lanes[l], base + p + l, qk, qx, qn);
    }
    for (; p < end; p++)
        if (lbk_candidate_less(row[p], base + p, tk, ti))
            lbk_queue(row[p], base + p, qk, qx, qn);
}
#endif

/* One pipeline step: every work-item takes what its left neighbour passed on
 * in the previous step (work-item 0 takes the next stream element), runs it
 * through its bubbles - each keeps the smaller and hands on the larger - and
 * passes what is left over to the right. The pass buffer is double-buffered
 * by step parity so one barrier per step suffices. */
inline void lbk_bubble_step(const uint t, const uint nb, const uint step, float in_k, uint in_i,
                            float *hk, uint *hx, __local float *pk, __local uint *px,
                            __local float *thr_k, __local uint *thr_i)
{
    const uint cur = (step & 1u) * LBK_W, prv = LBK_W - cur;
    if (t > 0) {
        in_k = pk[prv + t - 1];
        in_i = px[prv + t - 1];
    }
    for (uint b = 0; b < LBK_B; b++) {
        if (b < nb && lbk_candidate_less(in_k, in_i, hk[b], hx[b])) {
            const float tk = hk[b];
            const uint ti = hx[b];
            hk[b] = in_k;
            hx[b] = in_i;
            in_k = tk;
            in_i = ti;
        }
    }
    pk[cur + t] = in_k;
    px[cur + t] = in_i;
    if (t == LBK_W - 1) {
        *thr_k = hk[nb - 1];
        *thr_i = hx[nb - 1];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Held values never increase and are non-decreasing along the chain, so once
 * the last bubble holds a real candidate, K candidates already seen are <= it:
 * anything not smaller can never be among the K smallest. That filter lets a
 * block of stream elements skip the pipeline entirely once the bubbles have
 * warmed up, which is where the bubble beats sorting everything. Elements that
 * pass are queued in local memory (in any order: the result is a set under a
 * total order, so arrival order does not matter) and fed to the pipeline. */
inline void lbk_bubble_run(__global const float *k0, __global const uint *i0, const uint n0,
                           __global const float *k1, __global const uint *i1, const uint base,
                           const uint n, __global float *out_k, __global uint *out_i,
                           __local float *pk, __local uint *px, __local float *qk,
                           __local uint *qx, __local uint *qn, __local float *thr_k,
                           __local uint *thr_i)
{
    const uint t = get_local_id(0);
    const uint first = t * LBK_B;
    const uint nb = first < LBK_K ? min((uint)LBK_B, (uint)LBK_K - first) : 0u;
    float hk[LBK_B];
    uint hx[LBK_B];
    for (uint b = 0; b < LBK_B; b++) {
        hk[b] = INFINITY;
        hx[b] = LBK_NO_INDEX;
    }
    pk[t] = INFINITY;
    px[t] = LBK_NO_INDEX;
    pk[LBK_W + t] = INFINITY;
    px[LBK_W + t] = LBK_NO_INDEX;
    if (t == 0) {
        *thr_k = INFINITY;
        *thr_i = LBK_NO_INDEX;
    }
    uint step = 0;
    for (uint lo = 0; lo < n; lo += LBK_L) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t == 0)
            *qn = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        const float tk = *thr_k;
        const uint ti = *thr_i;
#if LBK_SCAN % 16 == 0
        if (n0 == 0 && !i1) {
            lbk_filter_row(k1, base, lo + t * LBK_SCAN, n, tk, ti, qk, qx, qn);
        } else
#endif
            for (uint s = 0; s < LBK_SCAN; s++) {
                const uint p = lo + s * LBK_W + t;
                if (p < n) {
                    float key;
                    uint index;
                    lbk_fetch(k0, i0, n0, k1, i1, base, p, &key, &index);
                    if (lbk_candidate_less(key, index, tk, ti))
                        lbk_queue(key, index, qk, qx, qn);
                }
            }
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint m = *qn;
        for (uint e = 0; e < m; e++, step++)
            lbk_bubble_step(t, nb, step, qk[e], qx[e], hk, hx, pk, px, thr_k, thr_i);
    }
    /* Drain: the last element entered needs W - 1 more steps to pass every
     * work-item. */
    for (uint e = 0; e < LBK_W; e++, step++)
        lbk_bubble_step(t, nb, step, INFINITY, LBK_NO_INDEX, hk, hx, pk, px, thr_k, thr_i);
    for (uint b = 0; b < nb; b++) {
        out_k[first + b] = hk[b];
        out_i[first + b] = hx[b];
    }
}

/* Work-group (g, q): group g of row q of the distance matrix, nr columns cut
 * into groups of group_len; the K smallest go to surv[(q * groups + g) * K]. */
__kernel __attribute__((reqd_work_group_size(LBK_W, 1, 1))) void
lbk_bubble_groups(__global const float *dist, const ulong ldd, const uint nr,
                  const uint group_len, const uint base, __global float *surv_k,
                  __global uint *surv_i)
{
    __local float pk[2 * LBK_W];
    __local uint px[2 * LBK_W];
    __local float qk[LBK_L];
    __local uint qx[LBK_L];
    __local uint qn;
    __local float thr_k;
    __local uint thr_i;
    const uint g = get_group_id(0), q = get_group_id(1), groups = get_num_groups(0);
    const uint lo = min(g * group_len, nr);
    const uint hi = min(lo + group_len, nr);
    const ulong out = ((ulong)q * groups + g) * LBK_K;
    lbk_bubble_run(0, 0, 0, dist + (ulong)q * ldd + lo, 0, base + lo, hi - lo, surv_k + out,
                   surv_i + out, pk, px, qk, qx, &qn, &thr_k, &thr_i);
}

/* Work-group q: the K smallest of best[q] (when use_prev; results of earlier
 * reference chunks) and the `count` survivors of row q, written over best[q].
 * Safe in place: best[q] is read only before the drain and written after. */
__kernel __attribute__((reqd_work_group_size(LBK_W, 1, 1))) void
lbk_bubble_final(__global const float *surv_k, __global const uint *surv_i, const uint count,
                 const uint use_prev, __global float *best_k, __global uint *best_i)
{
    __local float pk[2 * LBK_W];
    __local uint px[2 * LBK_W];
    __local float qk[LBK_L];
    __local uint qx[LBK_L];
    __local uint qn;
    __local float thr_k;
    __local uint thr_i;
    const uint q = get_group_id(1);
    const uint n0 = use_prev ? LBK_K : 0;
    const ulong row = (ulong)q * count, out = (ulong)q * LBK_K;
    lbk_bubble_run(best_k + out, best_i + out, n0, surv_k + row, surv_i + row, 0, n0 + count,
                   best_k + out, best_i + out, pk, px, qk, qx, &qn, &thr_k, &thr_i);
}

/* NAME(key, index, bk, bi): (key, index) into the ascending K-list bk/bi
 * of KEY_T keys, ordered by LESS ((key, index) order), unless it is not
 * among the K smallest or already held (a candidate met again in a scan):
 * the float32 cascade's lists and the integer cascade's. */
#define LBK_DEFINE_LIST_INSERT(NAME, KEY_T, LESS)                                                \
    inline void NAME(const KEY_T key, const uint index, KEY_T *bk, uint *bi)                     \
    {                                                                                            \
        if (!LESS(key, index, bk[LBK_K - 1], bi[LBK_K - 1]))                                     \
            return;                                                                              \
        int t = LBK_K - 1;                                                                       \
        while (t > 0 && LESS(key, index, bk[t - 1], bi[t - 1]))                                  \
            t--;                                                                                 \
        if (t > 0 && bi[t - 1] == index)                                                         \
            return;                                                                              \
        for (int s = LBK_K - 1; s > t; s--) {                                                    \
            bk[s] = bk[s - 1];                                                                   \
            bi[s] = bi[s - 1];                                                                   \
        }                                                                                        \
        bk[t] = key;                                                                             \
        bi[t] = index;                                                                           \
    }

#if LBK_REF == LBK_REF_F32 /* the cascade is float32's alone */
/* The L2 cascade (src/engines/cascade.h): work-item q finds the K best of
 * the rows its coarse bounds cannot exclude. First its K' candidates (the
 * rows of its K' smallest coarse bounds, found by a first scan of its bound
 * row) get exact keys, so that the running K-th exact key kth starts near
 * its final value. Then, for every row whose
 * coarse bound is at most kth * slope + qeps[q], the prefilter's full bound
 * (a dot product in any order: contiguous vector loads of the row-major
 * shard) decides whether the row can be among the K best: only if the bound
 * is at most kth does it get its exact key, LBK_VW rows at a time, each lane
 * its own row's sequential sum. kth only ever decreases, so a row passed
 * over could never have entered. A query that would check more than
 * max_checks rows stops and reports max_checks + 1: the host sends it down
 * the prefilter path instead. One work-item per work-group: its lists stay
 * in registers. */
#define LBK_GATHER4(x, o, j) (float4)(x[o[0] + j], x[o[1] + j], x[o[2] + j], x[o[3] + j])
#define LBK_GATHER8(x, o, j)                                                                     \
    (float8)(LBK_GATHER4(x, o, j), x[o[4] + j], x[o[5] + j], x[o[6] + j], x[o[7] + j])
#define LBK_GATHER16(x, o, j)                                                                    \
    (float16)(LBK_GATHER8(x, o, j), x[o[8] + j], x[o[9] + j], x[o[10] + j], x[o[11] + j],        \
              x[o[12] + j], x[o[13] + j], x[o[14] + j], x[o[15] + j])
#define LBK_GATHER LBK_CAT(LBK_GATHER, LBK_VW)

LBK_DEFINE_LIST_INSERT(lbk_list_insert, float, lbk_candidate_less)

/* The exact keys of rows ids[0 .. m) (m <= LBK_VW) into the K-list. */
inline void lbk_cascade_flush(__global const float *q, __global const float *rows, const uint dim,
                              const uint *ids, const uint m, float *bk, uint *bi)
{
    ulong start[LBK_VW]; /* lanes past m repeat row ids[0] */
    for (uint l = 0; l < LBK_VW; l++)
        start[l] = (ulong)ids[l < m ? l : 0] * dim;
    floatv s = (floatv)(0.0f);
    for (uint j = 0; j < dim; j++)
        s = lbk_key_stepv(s, (floatv)(q[j]), LBK_GATHER(rows, start, j), LBK_METRIC);
    float keys[LBK_VW];
    vstorev(lbk_key_finishv(s, LBK_METRIC), 0, keys);
    for (uint l = 0; l < m; l++)
        lbk_list_insert(keys[l], ids[l], bk, bi);
}

/* K' as the prefilter has it (src/engines/brute.c). */
#define LBK_CASCADE_KP (LBK_K + (LBK_K > 8 ? LBK_K : 8))

/* Rows checked with the full bound together: their dot products run
 * interleaved, so that the loads of several rows are in flight at once (the
 * rows come from memory, not cache). */
#define LBK_CHECK_BATCH 8

/* State of one query's scan: the K-list, the rows waiting for the full
 * bound and for exact keys, and the coarse threshold. */
typedef struct {
    float bk[LBK_K];
    uint bi[LBK_K];
    uint ids[LBK_VW];
    uint pend[LBK_CHECK_BATCH];
    uint cand[LBK_CASCADE_KP]; /* the first candidates, already ranked */
    uint waiting, pending, checks, cands;
    float coarse_t;
} lbk_cascade_state;

inline void lbk_cascade_drain(lbk_cascade_state *st, __global const float *q,
                              __global const float *rows, const uint dim, const float slope,
                              const float eps)
{
    lbk_cascade_flush(q, rows, dim, st->ids, st->waiting, st->bk, st->bi);
    st->waiting = 0;
    st->coarse_t = st->bk[LBK_K - 1] * slope + eps;
}

/* The prefilter's L2 lower bound (lbk_boundv) of each pending row's exact
 * key, from dot products summed in any order; the rows it does not exclude
 * wait for exact keys. */
inline void lbk_cascade_check(lbk_cascade_state *st, __global const float *q,
                              __global const float *rows, const uint dim, const float qn,
                              __global const float *rnorm, const float bound_c, const float slope,
                              const float eps)
{
    ulong start[LBK_CHECK_BATCH]; /* slots past `pending` repeat the first row */
    float16 acc[LBK_CHECK_BATCH];
    for (uint r = 0; r < LBK_CHECK_BATCH; r++) {
        start[r] = (ulong)st->pend[r < st->pending ? r : 0] * dim;
        acc[r] = (float16)(0.0f);
    }
    uint j = 0;
    for (; j + 16 <= dim; j += 16) {
        const float16 qv = vload16(0, q + j);
#pragma unroll
        for (uint r = 0; r < LBK_CHECK_BATCH; r++)
            acc[r] = fma(qv, vload16(0, rows + start[r] + j), acc[r]);
    }
    for (uint r = 0; r < st->pending; r++) {
        float lanes[16];
        vstore16(acc[r], 0, lanes);
        float dot = 0.0f;
        for (int l = 0; l < 16; l++)
            dot += lanes[l];
        for (uint t = j; t < dim; t++)
            dot = fma(q[t], rows[start[r] + t], dot);
        const float norms = qn + rnorm[st->pend[r]];
        const float bound = (norms - 2.0f * dot) - bound_c * norms;
        if (!(bound <= st->bk[LBK_K - 1]))
            continue;
        st->ids[st->waiting++] = st->pend[r];
        if (st->waiting == LBK_VW)
            lbk_cascade_drain(st, q, rows, dim, slope, eps);
    }
    st->pending = 0;
}

/* Values p .. p + 15 of a bound row of nr into lanes (+inf past nr); false
 * when a whole block of 16 has none <= t, which one vector compare shows. */
inline bool lbk_cascade_block(__global const float *row, const uint p, const uint nr,
                              const float t, float *lanes)
{
    if (p + 16 <= nr) {
        const float16 v = vload16(0, row + p);
        if (!any(islessequal(v, (float16)(t))))
            return false;
        vstore16(v, 0, lanes);
        return true;
    }
    for (uint l = 0; l < 16; l++)
        lanes[l] = p + l < nr ? row[p + l] : INFINITY;
    return true;
}

/* The rows of the K' smallest values of the bound row (any of equal
 * values), into the exact-key queue. */
inline void lbk_cascade_candidates(lbk_cascade_state *st, __global const float *crow,
                                   const uint nr, __global const float *q,
                                   __global const float *rows, const uint dim, const float slope,
                                   const float eps)
{
    float ck[LBK_CASCADE_KP];
    uint ci[LBK_CASCADE_KP];
    for (int c = 0; c < LBK_CASCADE_KP; c++) {
        ck[c] = INFINITY;
        ci[c] = LBK_NO_INDEX;
    }
    for (uint p = 0; p < nr; p += 16) {
        float lanes[16];
        if (!lbk_cascade_block(crow, p, nr, ck[LBK_CASCADE_KP - 1], lanes))
            continue;
        for (uint l = 0; l < 16; l++) {
            if (!(lanes[l] < ck[LBK_CASCADE_KP - 1]))
                continue;
            int t = LBK_CASCADE_KP - 1;
            for (; t > 0 && lanes[l] < ck[t - 1]; t--) {
                ck[t] = ck[t - 1];
                ci[t] = ci[t - 1];
            }
            ck[t] = lanes[l];
            ci[t] = p + l;
        }
    }
    st->cands = 0;
    for (int c = 0; c < LBK_CASCADE_KP && ci[c] != LBK_NO_INDEX; c++) {
        st->cand[st->cands++] = ci[c];
        st->ids[st->waiting++] = ci[c];
        if (st->waiting == LBK_VW)
            lbk_cascade_drain(st, q, rows, dim, slope, eps);
    }
    if (st->waiting > 0)
        lbk_cascade_drain(st, q, rows, dim, slope, eps);
}

/* Row r is one of the first candidates (its exact key is in the list
 * already, or was and fell out). */
inline bool lbk_cascade_ranked(const lbk_cascade_state *st, const uint r)
{
    for (uint c = 0; c < st->cands; c++)
        if (st->cand[c] == r)
            return true;
    return false;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
lbk_cascade_exact(__global const float *queries, const uint dim, __global const float *rows,
                  const uint nr, __global const float *coarse, const ulong ldd,
                  __global const float *qeps, const float slope, __global const float *qnorm,
                  __global const float *rnorm, const float bound_c, const uint max_checks,
                  __global float *best_k, __global uint *best_i, __global uint *checks)
{
    const uint q = get_global_id(0);
    __global const float *qrow = queries + (ulong)q * dim;
    __global const float *crow = coarse + (ulong)q * ldd;
    const float eps = qeps[q], qn = qnorm[q];
    lbk_cascade_state st;
    for (int s = 0; s < LBK_K; s++) {
        st.bk[s] = INFINITY;
        st.bi[s] = LBK_NO_INDEX;
    }
    st.waiting = 0;
    st.pending = 0;
    st.checks = 0;
    st.coarse_t = INFINITY;
    lbk_cascade_candidates(&st, crow, nr, qrow, rows, dim, slope, eps);
    uint p = 0;
    for (; p < nr && st.checks <= max_checks; p += 16) {
        float lanes[16];
        if (!lbk_cascade_block(crow, p, nr, st.coarse_t, lanes))
            continue;
        /* Lanes past nr are +inf, which passes while K > nr leaves
         * coarse_t infinite: they are not rows. */
        for (uint l = 0; l < 16 && p + l < nr; l++) {
            if (!(lanes[l] <= st.coarse_t) || lbk_cascade_ranked(&st, p + l))
                continue;
            st.checks++;
            st.pend[st.pending++] = p + l;
            if (st.pending == LBK_CHECK_BATCH)
                lbk_cascade_check(&st, qrow, rows, dim, qn, rnorm, bound_c, slope, eps);
        }
    }
    if (st.pending > 0)
        lbk_cascade_check(&st, qrow, rows, dim, qn, rnorm, bound_c, slope, eps);
    if (st.waiting > 0)
        lbk_cascade_drain(&st, qrow, rows, dim, slope, eps);
    checks[q] = p < nr ? max_checks + 1 : min(st.checks, max_checks);
    for (int s = 0; s < LBK_K; s++) {
        best_k[(ulong)q * LBK_K + s] = st.bk[s];
        best_i[(ulong)q * LBK_K + s] = st.bi[s];
    }
}
#endif

#if LBK_INT_KEYS
/* The integer L2 cascade (uint8, int8; src/engines/brute_icascade.c,
 * docs/design.md "Compact reference points"). Coarse rows are the integer
 * sums of groups of at most 4 dimensions of the values centred (uint8 values
 * less 128, int8 as they are: -128..127), so in -512..508, held as floats
 * (exact). By Cauchy-Schwarz |G| sum_G d_j^2 >= (sum_G d_j)^2, so C4 =
 * sum_g (Q_g - R_g)^2 <= 4 D for the exact squared distance D (the shift
 * cancels in Q_g - R_g): every quantity below is an exact integer, no
 * rounding term anywhere. |Q_g R_g| <= 512^2 = 262,144, so 64 terms stay
 * within 2^24, which float32 holds. */
#define LBK_ICASC_SPAN 64

/* One query block's coarse dot products over [d0, d1), in float32 spans of
 * at most LBK_ICASC_SPAN (every partial sum an integer float32 holds, so
 * exact in any order), each span converted and added in int32. */
inline void lbk_icasc_slice(accv acc[LBK_VQB][LBK_VRB], __global const float *qrow[LBK_VQB],
                            __global const float *rblk, const uint dc, const uint d0,
                            const uint d1)
{
    for (uint s0 = d0; s0 < d1; s0 += LBK_ICASC_SPAN) {
        const uint s1 = min(s0 + LBK_ICASC_SPAN, d1);
        floatv dot[LBK_VQB][LBK_VRB];
#pragma unroll
        for (int a = 0; a < LBK_VQB; a++)
#pragma unroll
            for (int b = 0; b < LBK_VRB; b++)
                dot[a][b] = (floatv)(0.0f);
        for (uint j = s0; j < s1; j++) {
            floatv r[LBK_VRB];
#pragma unroll
            for (int b = 0; b < LBK_VRB; b++)
                r[b] = vloadv(0, rblk + ((ulong)b * dc + j) * LBK_VW);
#pragma unroll
            for (int a = 0; a < LBK_VQB; a++) {
                const floatv q = (floatv)(qrow[a][j]);
#pragma unroll
                for (int b = 0; b < LBK_VRB; b++)
                    dot[a][b] = fma(q, r[b], dot[a][b]);
            }
        }
#pragma unroll
        for (int a = 0; a < LBK_VQB; a++)
#pragma unroll
            for (int b = 0; b < LBK_VRB; b++)
                acc[a][b] += convert_accv(dot[a][b]);
    }
}

/* C4 = (|Q|^2 - Q.R) + (|R|^2 - Q.R) of a query block, as int32 into its
 * rows (int bits in the distance buffer). No int32 wraps for dimensions up
 * to 8192: |Q|^2, |R|^2, |Q.R| <= 2048 x 512^2 = 2^29, each bracket within
 * 2^30, and the sum is C4 <= 4 D <= 4 x 8192 x 255^2 = 2,130,739,200. */
inline void lbk_icasc_store(accv part[LBK_VQB][LBK_VRB], const uint q0, const uint nq,
                            const uint b0, const uint nr, __global int *out, const ulong ldd,
                            __global const int *qnorm, __global const int *rnorm)
{
    for (int a = 0; a < LBK_VQB; a++) {
        if (q0 + a >= nq)
            break;
        __global int *row = out + (ulong)(q0 + a) * ldd;
        for (int b = 0; b < LBK_VRB; b++) {
            const accv c4 = ((accv)(qnorm[q0 + a]) - part[a][b]) +
                            (vloadv(0, rnorm + (b0 + b) * LBK_VW) - part[a][b]);
            const uint r0 = (b0 + b) * LBK_VW;
            if (r0 + LBK_VW <= nr) {
                vstorev(c4, 0, row + r0);
                continue;
            }
            int lanes[LBK_VW];
            vstorev(c4, 0, lanes);
            for (uint l = 0; l < LBK_VW && r0 + l < nr; l++)
                row[r0 + l] = lanes[l];
        }
    }
}

/* The coarse bounds C4 of nq coarse queries against the whole coarse shard
 * (blocked layout, dc dimensions), work-items as lbk_blocked's. */
__kernel void lbk_icasc_coarse(__global const float *queries, const uint nq,
                               __global const float *refs, const uint nr, const uint dc,
                               __global int *out, const ulong ldd, __global const int *qnorm,
                               __global const int *rnorm, const uint qt)
{
    const uint b0 = get_global_id(0) * LBK_VRB;
    const uint first = get_global_id(1) * qt * LBK_VQB;
    if (first >= nq || b0 * LBK_VW >= nr)
        return;
    const uint blocks = min(qt, (nq - first + LBK_VQB - 1) / LBK_VQB);
    __global const float *rblk = refs + (ulong)b0 * dc * LBK_VW;
    accv part[LBK_QT][LBK_VQB][LBK_VRB];
    for (uint d0 = 0; d0 < dc; d0 += LBK_KC) {
        const uint d1 = min(d0 + (uint)LBK_KC, dc);
        for (uint s = 0; s < blocks; s++) {
            const uint q0 = first + s * LBK_VQB;
            __global const float *qrow[LBK_VQB];
            accv acc[LBK_VQB][LBK_VRB];
#pragma unroll
            for (int a = 0; a < LBK_VQB; a++) {
                qrow[a] = queries + (ulong)min(q0 + a, nq - 1) * dc;
#pragma unroll
                for (int b = 0; b < LBK_VRB; b++)
                    acc[a][b] = d0 == 0 ? (accv)(0) : part[s][a][b];
            }
            lbk_icasc_slice(acc, qrow, rblk, dc, d0, d1);
#pragma unroll
            for (int a = 0; a < LBK_VQB; a++)
#pragma unroll
                for (int b = 0; b < LBK_VRB; b++)
                    part[s][a][b] = acc[a][b];
        }
    }
    for (uint s = 0; s < blocks; s++)
        lbk_icasc_store(part[s], first + s * LBK_VQB, nq, b0, nr, out, ldd, qnorm, rnorm);
}

/* K-list entries: (exact key, index), ascending, pads (INT_MAX, LBK_NO_INDEX). */
inline bool lbk_icasc_less(const int k, const uint i, const int k2, const uint i2)
{
    return k < k2 || (k == k2 && i < i2);
}

LBK_DEFINE_LIST_INSERT(lbk_icasc_insert, int, lbk_icasc_less)

/* The exact squared distance of a query and a row-major row: int32 sums
 * (exact, so in any order; at most dim x 255^2). */
inline int lbk_icasc_key(__global const float *q, __global const lbk_ref_t *r, const uint dim)
{
    int16 acc = (int16)(0);
    uint j = 0;
    for (; j + 16 <= dim; j += 16) {
        const int16 d = convert_int16(vload16(0, q + j)) - convert_int16(vload16(0, r + j));
        acc += d * d;
    }
    int s = acc.s0 + acc.s1 + acc.s2 + acc.s3 + acc.s4 + acc.s5 + acc.s6 + acc.s7 + acc.s8 +
            acc.s9 + acc.sa + acc.sb + acc.sc + acc.sd + acc.se + acc.sf;
    for (; j < dim; j++) {
        const int d = (int)q[j] - (int)r[j];
        s += d * d;
    }
    return s;
}

/* K' as the float32 cascade has it. */
#define LBK_ICASC_KP (LBK_K + (LBK_K > 8 ? LBK_K : 8))

/* 4 kth as the threshold on C4 (INT_MAX while the list is not full). */
inline int lbk_icasc_threshold(const int kth) { return kth > INT_MAX / 4 ? INT_MAX : 4 * kth; }

/* The rows of the K' smallest C4 of a query's row (any of equal values)
 * into ci; their count (fewer where nr < K'). Every C4 is below INT_MAX (at
 * most 4 x 8192 x 255^2), so the pads fill first; a block of 16 with none
 * below the K'-th is skipped. */
inline uint lbk_icasc_candidates(__global const int *crow, const uint nr, uint *ci)
{
    int ck[LBK_ICASC_KP];
    for (int c = 0; c < LBK_ICASC_KP; c++) {
        ck[c] = INT_MAX;
        ci[c] = LBK_NO_INDEX;
    }
    for (uint p = 0; p < nr; p += 16) {
        if (p + 16 <= nr && !any(vload16(0, crow + p) < (int16)(ck[LBK_ICASC_KP - 1])))
            continue;
        for (uint l = 0; l < min(16u, nr - p); l++) {
            const int v = crow[p + l];
            if (!(v < ck[LBK_ICASC_KP - 1]))
                continue;
            int t = LBK_ICASC_KP - 1;
            for (; t > 0 && v < ck[t - 1]; t--) {
                ck[t] = ck[t - 1];
                ci[t] = ci[t - 1];
            }
            ck[t] = v;
            ci[t] = p + l;
        }
    }
    uint cands = 0;
    while (cands < LBK_ICASC_KP && ci[cands] != LBK_NO_INDEX)
        cands++;
    return cands;
}

/* Work-item q: the K best of the rows its coarse bounds cannot exclude.
 * The rows of the K' smallest C4 get exact keys first; then every row with
 * C4 <= 4 kth (kth the running K-th exact key; ties kept) gets its exact
 * key: a row with C4 > 4 kth has D >= C4 / 4 > kth and can never enter, and
 * kth only decreases. A query needing more than max_checks exact keys stops
 * and reports max_checks + 1 (the host sends it down the dot path). */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
lbk_icasc_exact(__global const float *queries, const uint dim, __global const lbk_ref_t *rows,
                const uint nr, __global const int *coarse, const ulong ldd, const uint max_checks,
                __global float *best_k, __global uint *best_i, __global uint *checks)
{
    const uint q = get_global_id(0);
    __global const float *qrow = queries + (ulong)q * dim;
    __global const int *crow = coarse + (ulong)q * ldd;
    int bk[LBK_K];
    uint bi[LBK_K];
    for (int s = 0; s < LBK_K; s++) {
        bk[s] = INT_MAX;
        bi[s] = LBK_NO_INDEX;
    }
    uint ci[LBK_ICASC_KP];
    const uint cands = lbk_icasc_candidates(crow, nr, ci);
    for (uint c = 0; c < cands; c++)
        lbk_icasc_insert(lbk_icasc_key(qrow, rows + (ulong)ci[c] * dim, dim), ci[c], bk, bi);
    int t = lbk_icasc_threshold(bk[LBK_K - 1]);
    uint done = 0, p = 0;
    for (; p < nr && done <= max_checks; p += 16) {
        int lanes[16];
        if (p + 16 <= nr) {
            const int16 v = vload16(0, crow + p);
            if (!any(v <= (int16)(t)))
                continue;
            vstore16(v, 0, lanes);
        } else {
            for (uint l = 0; l < 16; l++)
                lanes[l] = p + l < nr ? crow[p + l] : INT_MAX;
        }
        for (uint l = 0; l < min(16u, nr - p); l++) {
            if (!(lanes[l] <= t))
                continue;
            bool ranked = false;
            for (uint c = 0; c < cands; c++)
                ranked |= ci[c] == p + l;
            if (ranked)
                continue;
            done++;
            lbk_icasc_insert(lbk_icasc_key(qrow, rows + (ulong)(p + l) * dim, dim), p + l, bk,
                             bi);
            t = lbk_icasc_threshold(bk[LBK_K - 1]);
        }
    }
    checks[q] = p < nr ? max_checks + 1 : min(done, max_checks);
    for (int s = 0; s < LBK_K; s++) {
        best_k[(ulong)q * LBK_K + s] = bi[s] == LBK_NO_INDEX ? INFINITY : lbk_int_key_code(bk[s]);
        best_i[(ulong)q * LBK_K + s] = bi[s];
    }
}
#endif
