/* What host C code and the OpenCL C kernels must agree on, written once and
 * compiled on both sides: prepended to every kernel source at build time,
 * included by the host modules that launch kernels (src/device, src/engines).
 * Plain scalar types with the same layout on both sides; the few primitives
 * that differ (bit casts, fabs, bit length) are defined per side below.
 *
 * The test oracles (tests/oracle, tests/kdtree/ref_tagsort.c) must not use
 * this header: they exist to check it. */
#ifndef LBK_SHARED_H
#define LBK_SHARED_H

#ifdef __OPENCL_C_VERSION__
/* Host and device must round identically: no fused multiply-adds. */
#pragma OPENCL FP_CONTRACT OFF
typedef uint lbk_u32;
typedef ulong lbk_u64;
typedef int lbk_i32;
#define LBK_FABS fabs
#define LBK_FMAX fmax
#define LBK_IMAX max
#define LBK_INFINITY INFINITY
static inline lbk_u32 lbk_float_bits(float f) { return as_uint(f); }
static inline float lbk_bits_float(lbk_u32 b) { return as_float(b); }
/* Bits needed to write v: 0 for 0, 64 - clz(v) otherwise. */
static inline lbk_u32 lbk_bit_length(lbk_u64 v) { return 64u - (lbk_u32)clz(v); }
#else
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
typedef uint32_t lbk_u32;
typedef uint64_t lbk_u64;
typedef int32_t lbk_i32;
#define LBK_FABS fabsf
#define LBK_FMAX fmaxf
#define LBK_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define LBK_INFINITY INFINITY
static inline lbk_u32 lbk_float_bits(float f)
{
    lbk_u32 b;
    memcpy(&b, &f, sizeof b);
    return b;
}
static inline float lbk_bits_float(lbk_u32 b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}
static inline lbk_u32 lbk_bit_length(lbk_u64 v)
{
    lbk_u32 bits = 0;
    for (; v; v >>= 1)
        bits++;
    return bits;
}
#endif

/* Metric ids passed to kernels; equal to lbk_metric in enums.h (checked on
 * the host). */
#define LBK_KERNEL_METRIC_L2 0
#define LBK_KERNEL_METRIC_L1 1
#define LBK_KERNEL_METRIC_LINF 2
#define LBK_KERNEL_METRIC_COSINE 3
#define LBK_KERNEL_METRIC_IP 4

/* ---- the key (docs/design.md section 2) ----
 * One dimension's step, dimensions ascending from s = 0: L2 s + d*d with
 * d = q - r and the product rounded on its own (its own statement, and
 * FP_CONTRACT off), L1 s + |d|, Linf max(s, |d|), IP and COSINE s + q*r
 * (the product rounded on its own). Then the finish: IP and COSINE negate
 * the sum (the nearest has the largest dot product, the smallest key), a
 * NaN sum (products overflowing to both infinities) becoming +inf; the
 * others keep it. A macro that defines the step for a type, so that a kernel
 * can also have it for vector lanes (float16: each lane its own sequential
 * sum). With a constant metric the branches fold away. Padding with q = r =
 * 0 adds exact zeros (the sum is never -0, so s + 0 is s). */
#define LBK_DEFINE_KEY_STEP(name, T)                                                             \
    static inline T name(T s, T q, T r, int metric)                                              \
    {                                                                                            \
        if (metric == LBK_KERNEL_METRIC_COSINE || metric == LBK_KERNEL_METRIC_IP) {              \
            const T p = q * r;                                                                   \
            return s + p;                                                                        \
        }                                                                                        \
        const T d = q - r;                                                                       \
        if (metric == LBK_KERNEL_METRIC_L2) {                                                    \
            const T sq = d * d;                                                                  \
            return s + sq;                                                                       \
        }                                                                                        \
        if (metric == LBK_KERNEL_METRIC_L1)                                                      \
            return s + LBK_FABS(d);                                                              \
        return LBK_FMAX(s, LBK_FABS(d));                                                         \
    }
LBK_DEFINE_KEY_STEP(lbk_key_step, float)

static inline bool lbk_metric_negates(int metric)
{
    return metric == LBK_KERNEL_METRIC_COSINE || metric == LBK_KERNEL_METRIC_IP;
}

/* ---- exact integer keys (uint8 and int8 points: docs/design.md "Compact
 * reference points") ----
 * The same steps on integers, accumulated in int32: L2 s + d*d, L1 s + |d|,
 * Linf max(s, |d|), IP s + q*r, with |d| = max(q - r, r - q). With every
 * value within one byte's range (|q - r| <= 255, |q r| <= 16384) and
 * dimension <= LBK_INT_KEY_DIM_MAX no sum leaves the range the code below
 * holds, so each key is the exact integer. */
#define LBK_DEFINE_INT_KEY_STEP(name, T)                                                         \
    static inline T name(T s, T q, T r, int metric)                                              \
    {                                                                                            \
        if (metric == LBK_KERNEL_METRIC_COSINE || metric == LBK_KERNEL_METRIC_IP)                \
            return s + q * r;                                                                    \
        const T d = LBK_IMAX(q - r, r - q);                                                      \
        if (metric == LBK_KERNEL_METRIC_L2)                                                      \
            return s + d * d;                                                                    \
        if (metric == LBK_KERNEL_METRIC_L1)                                                      \
            return s + d;                                                                        \
        return LBK_IMAX(s, d);                                                                   \
    }

/* An exact integer key k (IP: the negated sum) as the float whose order is
 * k's order: the bits of k's magnitude above the smallest normal float's,
 * its sign as the float's sign. Every code is a finite normal float, so the
 * selection's float comparisons (and the MPI merge's) order codes as the
 * integers, ties by index as ever, and a pad (+inf) still sorts last. The
 * host turns a final list's codes back (lbk_int_key_value) into the float32
 * rounding of each exact key. */
#define LBK_INT_KEY_BIAS 0x00800000u
#define LBK_INT_KEY_MAGNITUDE_MAX 2130706431 /* 0x7f7fffff - LBK_INT_KEY_BIAS */
/* The largest dimension with every uint8 or int8 key codable: 32767 x 255^2
 * = 2130674175 <= LBK_INT_KEY_MAGNITUDE_MAX (and int32 sums never wrap). */
#define LBK_INT_KEY_DIM_MAX 32767
static inline float lbk_int_key_code(lbk_i32 k)
{
    const lbk_u32 m = (lbk_u32)(k < 0 ? -k : k) + LBK_INT_KEY_BIAS;
    return lbk_bits_float(k < 0 ? m | 0x80000000u : m);
}
static inline lbk_i32 lbk_int_key_of_code(float code)
{
    const lbk_u32 b = lbk_float_bits(code);
    const lbk_i32 m = (lbk_i32)((b & 0x7fffffffu) - LBK_INT_KEY_BIAS);
    return (b >> 31) ? -m : m;
}

static inline float lbk_key_finish(float s, int metric)
{
    if (!lbk_metric_negates(metric))
        return s;
    return s != s ? LBK_INFINITY : -s;
}

/* ---- candidates ----
 * Ordered by (key, index). A missing candidate (pad) is (+inf, LBK_NO_INDEX),
 * which sorts after every real one, even a real +inf. */
#define LBK_NO_INDEX 0xffffffffu
#define LBK_INF_BITS 0x7f800000u

static inline bool lbk_candidate_less(float ka, lbk_u32 ia, float kb, lbk_u32 ib)
{
    return ka < kb || (ka == kb && ia < ib);
}

/* Packed: the float bits of the key above the index. For non-negative keys
 * (L2, L1, Linf: the k-d tree's metrics) integer order of packed candidates
 * is (key, index) order. */
#define LBK_PACKED_PAD (((lbk_u64)LBK_INF_BITS << 32) | (lbk_u64)LBK_NO_INDEX)

static inline lbk_u64 lbk_pack(float key, lbk_u32 index)
{
    return ((lbk_u64)lbk_float_bits(key) << 32) | (lbk_u64)index;
}
static inline float lbk_packed_key(lbk_u64 packed)
{
    return lbk_bits_float((lbk_u32)(packed >> 32));
}
static inline lbk_u32 lbk_packed_index(lbk_u64 packed) { return (lbk_u32)packed; }

/* Order-preserving bits of a float: unsigned integer order is the float
 * order, with -0 before +0 and every value (infinities and NaNs too) in one
 * total order. The k-d tree builders sort and select by these. */
static inline lbk_u32 lbk_order_bits(float f)
{
    const lbk_u32 b = lbk_float_bits(f);
    return b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u);
}

/* ---- radius search's lists (kernels/tree_query.cl, kernels/brute_radius.cl) ----
 * The fill's window holds each point as one code whose integer order is
 * (key, row) order for any key: the key's order bits after + 0.0f (which
 * makes -0 +0, equal as a float compare sees them) above the row. The host
 * gets the key back from the code, a zero as the metric's zero: every zero
 * key of a metric has the same sign (knn.h). */
static inline lbk_u64 lbk_radius_code(float key, lbk_u32 row)
{
    return ((lbk_u64)lbk_order_bits(key + 0.0f) << 32) | (lbk_u64)row;
}
static inline float lbk_radius_code_key(lbk_u64 code, int metric)
{
    const lbk_u32 b = (lbk_u32)(code >> 32);
    const float key = lbk_bits_float(b ^ ((b >> 31) ? 0x80000000u : 0xffffffffu));
    return key == 0.0f ? (lbk_metric_negates(metric) ? -0.0f : 0.0f) : key;
}

/* A work-item sorts its query's codes itself when the list is no longer
 * than this and lies wholly in the window: one list per work-item, in
 * parallel, where the host would sort them one after another (1e5 lists of
 * 16 points over 1e6: 0.12 s of a 0.35 s fill on the host); the host
 * checks the lists and sorts the others (engine.c). */
#define LBK_RADIUS_SORT_MAX 4096u

/* A list at most this long is sorted through a private copy and bucket
 * starts (3 KiB a work-item); longer ones in place (lbk_radius_sort_list). */
#define LBK_RADIUS_SORT_PRIVATE 256u
#define LBK_RADIUS_SORT_RUN 8u

#ifdef __OPENCL_C_VERSION__
/* Shell sort with Ciura's gaps: in place, no recursion; its last pass
 * (gap 1) is an insertion sort, all a short list needs. */
static inline void lbk_radius_shell_sort(__global ulong *codes, uint len)
{
    const uint gaps[9] = {1750u, 701u, 301u, 132u, 57u, 23u, 10u, 4u, 1u};
    for (int g = 0; g < 9; g++) {
        const uint gap = gaps[g];
        for (uint i = gap; i < len; i++) {
            const ulong c = codes[i];
            uint j = i;
            for (; j >= gap && codes[j - gap] > c; j -= gap)
                codes[j] = codes[j - gap];
            codes[j] = c;
        }
    }
}

/* One pass of a bottom-up merge sort: the sorted runs of `width` of src
 * merged in pairs into dst. The merge takes the smaller head by a select,
 * not a branch: which head is smaller is a coin toss the branch predictor
 * loses (codes are distinct: rows are). OpenCL C 1.2 has no generic
 * address space, hence one function per direction. */
#define LBK_DEFINE_RADIUS_MERGE(name, FROM, TO)                                                  \
    static inline void name(FROM const ulong *src, TO ulong *dst, uint len, uint width)          \
    {                                                                                            \
        for (uint lo = 0; lo < len; lo += 2u * width) {                                          \
            const uint mid = min(lo + width, len), hi = min(lo + 2u * width, len);               \
            uint i = lo, j = mid, o = lo;                                                        \
            while (i < mid && j < hi) {                                                          \
                const ulong x = src[i], y = src[j];                                              \
                const uint take_y = y < x ? 1u : 0u;                                             \
                dst[o++] = take_y ? y : x;                                                       \
                i += 1u - take_y;                                                                \
                j += take_y;                                                                     \
            }                                                                                    \
            while (i < mid)                                                                      \
                dst[o++] = src[i++];                                                             \
            while (j < hi)                                                                       \
                dst[o++] = src[j++];                                                             \
        }                                                                                        \
    }
LBK_DEFINE_RADIUS_MERGE(lbk_radius_merge_to_private, __global, __private)
LBK_DEFINE_RADIUS_MERGE(lbk_radius_merge_to_global, __private, __global)

/* The key of a code, its zeros +0 (the sorts compare codes; a key only
 * picks a bucket). */
static inline float lbk_radius_code_float(ulong code)
{
    const uint b = (uint)(code >> 32);
    return as_float(b ^ ((b >> 31) ? 0x80000000u : 0xffffffffu));
}

/* Runs of LBK_RADIUS_SORT_RUN by insertion, then merge passes between the
 * list and tmp. */
static inline void lbk_radius_merge_sort(__global ulong *codes, uint len, __private ulong *tmp)
{
    for (uint lo = 0; lo < len; lo += LBK_RADIUS_SORT_RUN) {
        const uint hi = min(lo + LBK_RADIUS_SORT_RUN, len);
        for (uint i = lo + 1u; i < hi; i++) {
            const ulong c = codes[i];
            uint j = i;
            for (; j > lo && codes[j - 1u] > c; j--)
                codes[j] = codes[j - 1u];
            codes[j] = c;
        }
    }
    bool in_tmp = false;
    for (uint width = LBK_RADIUS_SORT_RUN; width < len; width *= 2u) {
        if (in_tmp)
            lbk_radius_merge_to_global(tmp, codes, len, width);
        else
            lbk_radius_merge_to_private(codes, tmp, len, width);
        in_tmp = !in_tmp;
    }
    for (uint i = 0; in_tmp && i < len; i++)
        codes[i] = tmp[i];
}

/* A list in (key, row) order. At most LBK_RADIUS_SORT_PRIVATE codes: a
 * distribution over len buckets by (key - lo) * len / (hi - lo), which is
 * monotone in the key (a subtraction and a product by a positive float
 * round monotonically, truncation too), so only codes of one bucket can be
 * out of order after it and a last insertion pass puts them in order: a
 * few plain passes where the shell sort's gap passes mispredicted about a
 * branch an element (0.42 of 1.2 CPU seconds of the radius kernels, 1e5
 * lists of 128 over 1e6 points). Keys that span no finite positive range
 * (all equal, or infinite) take the merge sort; longer lists the shell
 * sort in place. The result is the one sorted order of distinct codes,
 * whichever sort ran. */
static inline void lbk_radius_sort_list(__global ulong *codes, uint len)
{
    if (len > LBK_RADIUS_SORT_PRIVATE) {
        lbk_radius_shell_sort(codes, len);
        return;
    }
    if (len < 2u)
        return;
    ulong tmp[LBK_RADIUS_SORT_PRIVATE];
    float lo = INFINITY, hi = -INFINITY;
    for (uint i = 0; i < len; i++) {
        const float k = lbk_radius_code_float(codes[i]);
        lo = fmin(lo, k);
        hi = fmax(hi, k);
    }
    const float scale = (float)len / (hi - lo);
    if (!(hi > lo) || !(scale > 0.0f) || !(scale < INFINITY)) {
        lbk_radius_merge_sort(codes, len, tmp);
        return;
    }
    uint at[LBK_RADIUS_SORT_PRIVATE];
    for (uint b = 0; b < len; b++)
        at[b] = 0;
    for (uint i = 0; i < len; i++)
        at[min((uint)((lbk_radius_code_float(codes[i]) - lo) * scale), len - 1u)]++;
    for (uint b = 0, sum = 0; b < len; b++) {
        const uint c = at[b];
        at[b] = sum;
        sum += c;
    }
    for (uint i = 0; i < len; i++) {
        const ulong c = codes[i];
        tmp[at[min((uint)((lbk_radius_code_float(c) - lo) * scale), len - 1u)]++] = c;
    }
    for (uint i = 1; i < len; i++) {
        const ulong c = tmp[i];
        uint j = i;
        for (; j > 0 && tmp[j - 1u] > c; j--)
            tmp[j] = tmp[j - 1u];
        tmp[j] = c;
    }
    for (uint i = 0; i < len; i++)
        codes[i] = tmp[i];
}
#endif

/* ---- left-balanced tree shape (docs/design.md section 4) ----
 * Node s at slot s, children 2s+1 and 2s+2; n nodes, levels = bit length of
 * n. 64-bit intermediates, so the formulas stay exact for n near 2^32. */
static inline lbk_u32 lbk_kd_levels(lbk_u64 n) { return lbk_bit_length(n); }
static inline lbk_u32 lbk_kd_level(lbk_u64 s) { return lbk_bit_length(s + 1) - 1u; }

/* Nodes in the subtree of s (0 when s >= n). */
static inline lbk_u64 lbk_kd_subtree_size(lbk_u64 s, lbk_u64 n, lbk_u32 levels)
{
    if (s >= n)
        return 0;
    const lbk_u32 d = levels - lbk_kd_level(s) - 1u;
    const lbk_u64 fllc = ((s + 1) << d) - 1; /* first node of s's part of the last level */
    const lbk_u64 full = ((lbk_u64)1 << d) - 1;
    const lbk_u64 width = (lbk_u64)1 << d;
    const lbk_u64 last = n > fllc ? (n - fllc < width ? n - fllc : width) : 0;
    return full + last;
}

/* First array position of s's subtree while level(s) is being split. */
static inline lbk_u64 lbk_kd_segment_begin(lbk_u64 s, lbk_u64 n, lbk_u32 levels)
{
    const lbk_u32 l = lbk_kd_level(s);
    const lbk_u32 d = levels - l - 1u;
    const lbk_u64 first = ((lbk_u64)1 << l) - 1;
    const lbk_u64 m = s - first;
    const lbk_u64 rest = n - (((lbk_u64)1 << (levels - 1u)) - 1); /* nodes on the last level */
    const lbk_u64 lower = m << d;
    return first + m * (((lbk_u64)1 << d) - 1) + (lower < rest ? lower : rest);
}

/* ---- the tree query's buckets (kernels/tree_query.cl) ----
 * Subtrees of LBK_TREE_BUCKET_LEVELS levels at the bottom of the tree are
 * walked as buckets: 4 (15 points) was the fastest of 2..6 for 1e5 queries
 * over 1e6 uniform 3-D points with K = 16. Bucket b is the subtree of slot
 * 2^bl - 1 + b on the bucket level bl; every level above the last is full,
 * so there are 2^bl buckets. Its nodes, in level order, fill tiles of
 * LBK_TREE_TILE_LANES lanes: a bucket has 7 nodes above the last level and
 * up to 8 on it, so it takes two tiles when it has at least 9 nodes, one
 * otherwise; the last level fills from the left, so the two-tile buckets
 * come first, and tile positions need no table. */
#define LBK_TREE_BUCKET_LEVELS 4u
#define LBK_TREE_TILE_LANES 8u

/* The tree query's work counts, LBK_TQ_WORK_FIELDS 32-bit words per query:
 * the nodes its walk entered from their parent (a bucket counts as one
 * node) and the query-point keys it computed (one per node above the
 * buckets, one per point of each bucket entered). */
#define LBK_TQ_WORK_FIELDS 2u
#define LBK_TQ_WORK_NODES 0u
#define LBK_TQ_WORK_EVALS 1u

static inline lbk_u32 lbk_tq_bucket_level(lbk_u64 n)
{
    const lbk_u32 levels = lbk_kd_levels(n);
    return levels > LBK_TREE_BUCKET_LEVELS ? levels - LBK_TREE_BUCKET_LEVELS : 0u;
}

/* Buckets with two tiles: the first ones, while their part of the last
 * level (8 slots each) holds at least 2 of its r nodes. Smaller trees
 * (n < 15) are one bucket of at most 7 + 8 nodes: n >= 9 needs two. */
static inline lbk_u64 lbk_tq_two_tile_buckets(lbk_u64 n)
{
    const lbk_u32 levels = lbk_kd_levels(n);
    if (levels < LBK_TREE_BUCKET_LEVELS)
        return 0;
    const lbk_u64 last = n - (((lbk_u64)1 << (levels - 1u)) - 1u);
    return last >= 2 ? (last - 2) / 8 + 1 : 0;
}

static inline lbk_u64 lbk_tq_tile_start(lbk_u64 bucket, lbk_u64 two_tile_buckets)
{
    return bucket + (bucket < two_tile_buckets ? bucket : two_tile_buckets);
}

/* The position of s's pivot: after its left subtree. */
static inline lbk_u64 lbk_kd_pivot(lbk_u64 s, lbk_u64 n, lbk_u32 levels)
{
    return lbk_kd_segment_begin(s, n, levels) + lbk_kd_subtree_size(2 * s + 1, n, levels);
}

#ifndef __OPENCL_C_VERSION__
_Static_assert(sizeof(float) == 4 && sizeof(lbk_u32) == 4,
               "32-bit float and uint as on the device");
_Static_assert(sizeof(lbk_u64) == 8, "64-bit ulong as on the device");
_Static_assert(LBK_NO_INDEX == UINT32_MAX, "the pad index is the largest 32-bit index");
_Static_assert(LBK_PACKED_PAD == 0x7f800000ffffffffull,
               "the packed pad: +inf above LBK_NO_INDEX");
#endif

#endif
