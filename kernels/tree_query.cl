/* Tree kNN: Wald's stack-free traversal of a left-balanced k-d tree
 * (arXiv 2210.12859), one work-item per query.
 *
 * The K best so far live in the query's slice of `lists` as packed
 * candidates (lbk_pack: key bits above the original shard row), so one
 * integer compare orders by (key, row). The list is in global memory, not a
 * private array, so K is not bounded by registers or stack. */

/* The tree's points at their own width (LBK_TREE_REF, set by
 * lbk_tree_buckets_program_options): float32, uint8, int8, or float16 as
 * binary16 bits read by vload_half. Every such value converts to float
 * exactly, so the walk's float arithmetic is the widened points', bit for
 * bit (docs/design.md, "Compact reference points"). */
#define LBK_TREE_F32 0
#define LBK_TREE_U8 1
#define LBK_TREE_I8 2
#define LBK_TREE_F16 3
#ifndef LBK_TREE_REF
#define LBK_TREE_REF LBK_TREE_F32
#endif
#if LBK_TREE_REF == LBK_TREE_U8
typedef uchar tq_ref;
#define tq_load(p, i) ((float)(p)[i])
#define tq_load8(d, p) convert_float8(vload8(d, p))
#define TQ_SPARE 0
#elif LBK_TREE_REF == LBK_TREE_I8
typedef char tq_ref;
#define tq_load(p, i) ((float)(p)[i])
#define tq_load8(d, p) convert_float8(vload8(d, p))
#define TQ_SPARE 0
#elif LBK_TREE_REF == LBK_TREE_F16
typedef ushort tq_ref;
#define tq_load(p, i) vload_half(i, (__global const half *)(p))
#define tq_load8(d, p) vload_half8(d, (__global const half *)(p))
#define TQ_SPARE 0x7c00 /* +inf */
#else
typedef float tq_ref;
#define tq_load(p, i) (p)[i]
#define tq_load8(d, p) vload8(d, p)
#define TQ_SPARE LBK_INFINITY
#endif
/* An integer type has no infinity: a spare bucket lane's key is finite, and
 * the lane is skipped by its id instead. */
#define TQ_INT_REF (LBK_TREE_REF == LBK_TREE_U8 || LBK_TREE_REF == LBK_TREE_I8)

#if LBK_TREE_REF != LBK_TREE_F32
/* The build sorts float32 copies of the points (exact), and the built tree
 * goes back to the points' own width (exact: every value came from it). */
__kernel void tq_widen(__global const tq_ref *in, ulong count, __global float *out)
{
    const ulong g = get_global_id(0);
    if (g < count)
        out[g] = tq_load(in, g);
}

__kernel void tq_narrow(__global const float *in, ulong count, __global tq_ref *out)
{
    const ulong g = get_global_id(0);
    if (g >= count)
        return;
#if LBK_TREE_REF == LBK_TREE_F16
    vstore_half(in[g], g, (__global half *)out);
#else
    out[g] = (tq_ref)in[g];
#endif
}
#endif

static inline float tq_key(__global const float *q, __global const tq_ref *r, int dim, int metric)
{
    float s = 0.0f;
    /* One loop per metric, so the metric is not tested per dimension. */
    if (metric == LBK_KERNEL_METRIC_L2) {
        for (int j = 0; j < dim; j++)
            s = lbk_key_step(s, q[j], tq_load(r, j), LBK_KERNEL_METRIC_L2);
    } else if (metric == LBK_KERNEL_METRIC_L1) {
        for (int j = 0; j < dim; j++)
            s = lbk_key_step(s, q[j], tq_load(r, j), LBK_KERNEL_METRIC_L1);
    } else {
        for (int j = 0; j < dim; j++)
            s = lbk_key_step(s, q[j], tq_load(r, j), LBK_KERNEL_METRIC_LINF);
    }
    return s;
}

/* Insert a candidate into the sorted list when it beats the K-th; returns
 * the (new) K-th. */
static inline ulong tq_insert(__global ulong *list, int k, ulong packed, ulong worst)
{
    if (packed >= worst)
        return worst;
    int pos = k - 1;
    while (pos > 0 && list[pos - 1] > packed) {
        list[pos] = list[pos - 1];
        pos--;
    }
    list[pos] = packed;
    return list[k - 1];
}

/* Back from the close child: the far side holds keys >= the plane key
 * (rounding is monotone), so it is skipped only when that is strictly worse
 * than the current K-th: an equal key with a smaller row must still be
 * found. */
static inline bool tq_visit_far(float delta, int metric, ulong worst)
{
    const float plane = metric == LBK_KERNEL_METRIC_L2 ? delta * delta : fabs(delta);
    return plane <= lbk_packed_key(worst);
}

/* The buckets' copy (lbk_shared.h): tile t holds its lanes' coordinates
 * dimension-major ([t][dim][lane]) and their ids ([t][lane]), so that one
 * tile's keys are the lanes of a float8, each lane its own sequential sum
 * over the dimensions (the scalar step's key, bit for bit), read from
 * adjacent cache lines instead of one line per level of the tree order.
 * Spare lanes hold +inf coordinates and LBK_NO_INDEX: their packed
 * candidate is the pad, which no list takes. One work-item per bucket
 * lane (two tiles' worth). */
__kernel void tq_bucket_layout(__global const tq_ref *tree, __global const uint *ids, ulong n,
                               int dim, uint bucket_level, ulong twos,
                               __global tq_ref *bucket_pts, __global uint *bucket_ids)
{
    const ulong g = get_global_id(0), buckets = (ulong)1 << bucket_level;
    if (g >= buckets * 2 * LBK_TREE_TILE_LANES)
        return;
    const ulong b = g / (2 * LBK_TREE_TILE_LANES), j = g % (2 * LBK_TREE_TILE_LANES);
    const ulong tiles = b < twos ? 2 : 1;
    if (j >= tiles * LBK_TREE_TILE_LANES)
        return;
    const uint depth = lbk_kd_level(j);
    const ulong s = buckets - 1 + b;
    const ulong x = ((s + 1) << depth) - 1 + (j + 1 - ((ulong)1 << depth));
    const bool present = depth < LBK_TREE_BUCKET_LEVELS && x < n;
    const ulong tile = lbk_tq_tile_start(b, twos) + j / LBK_TREE_TILE_LANES;
    const ulong lane = j % LBK_TREE_TILE_LANES;
    __global tq_ref *dst = bucket_pts + tile * (ulong)dim * LBK_TREE_TILE_LANES + lane;
    for (int d = 0; d < dim; d++)
        dst[(ulong)d * LBK_TREE_TILE_LANES] =
            present ? tree[x * (ulong)dim + (ulong)d] : (tq_ref)TQ_SPARE;
    bucket_ids[tile * LBK_TREE_TILE_LANES + lane] = present ? ids[x] : LBK_NO_INDEX;
}

LBK_DEFINE_KEY_STEP(tq_key_step8, float8)

/* Every node of s's subtree (s on the bucket level), a tile of keys at a
 * time; only the lanes whose key is at or below the K-th's can enter the
 * list (packed order is key order first), and a loop over their bits has
 * no branch per lane. */
static inline ulong tq_bucket(__global const tq_ref *bucket_pts, __global const uint *bucket_ids,
                              int dim, __global const float *q, int metric, long s,
                              uint bucket_level, ulong twos, __global ulong *list, int k,
                              ulong worst)
{
    const ulong b = (ulong)s + 1 - ((ulong)1 << bucket_level);
    const ulong first = lbk_tq_tile_start(b, twos), end = first + (b < twos ? 2 : 1);
    for (ulong t = first; t < end; t++) {
        __global const tq_ref *tp = bucket_pts + t * (ulong)dim * LBK_TREE_TILE_LANES;
        float8 key = (float8)(0.0f);
        if (metric == LBK_KERNEL_METRIC_L2) {
            for (int d = 0; d < dim; d++)
                key = tq_key_step8(key, (float8)(q[d]), tq_load8(d, tp), LBK_KERNEL_METRIC_L2);
        } else {
            for (int d = 0; d < dim; d++)
                key = tq_key_step8(key, (float8)(q[d]), tq_load8(d, tp), metric);
        }
        /* The lanes' bits straight from the vector compare: a compare of
         * the stored keys read them back as a vector, which waited on the
         * two halves' stores (6 % of the kernel's samples on Zen 3). */
        const float kth = lbk_packed_key(worst);
        uint bits = (key.s0 <= kth ? 1u : 0u) | (key.s1 <= kth ? 2u : 0u) |
                    (key.s2 <= kth ? 4u : 0u) | (key.s3 <= kth ? 8u : 0u) |
                    (key.s4 <= kth ? 16u : 0u) | (key.s5 <= kth ? 32u : 0u) |
                    (key.s6 <= kth ? 64u : 0u) | (key.s7 <= kth ? 128u : 0u);
        if (bits == 0)
            continue;
        float keys[LBK_TREE_TILE_LANES];
        vstore8(key, 0, keys);
        __global const uint *ti = bucket_ids + t * LBK_TREE_TILE_LANES;
        while (bits) {
            const uint j = 31u - clz(bits & (0u - bits));
            bits &= bits - 1u;
#if TQ_INT_REF
            if (ti[j] == LBK_NO_INDEX)
                continue;
#endif
            worst = tq_insert(list, k, lbk_pack(keys[j], ti[j]), worst);
        }
    }
    return worst;
}

/* ---- the work count, shared by tq_knn and tq_radius ---- */

/* The points a bucket holds (its keys of spare lanes are not counted): the
 * 7 of its full levels and its part of the tree's last level, which fills
 * from the left, 8 slots a bucket; a tree of at most 4 levels is one bucket
 * of all n. Fixed per tree, so computed once per query. */
typedef struct {
    long bucket0, full, last;
} tq_evals_shape;

static inline tq_evals_shape tq_evals_shape_of(ulong n, uint bucket_level)
{
    tq_evals_shape s;
    s.bucket0 = ((long)1 << bucket_level) - 1;
    s.full = bucket_level ? 7 : (long)n;
    s.last = bucket_level ? (long)n - (((long)1 << (bucket_level + 3)) - 1) : 0;
    return s;
}

static inline uint tq_bucket_evals(const tq_evals_shape *s, long curr)
{
    return (uint)(s->full + clamp(s->last - 8 * (curr - s->bucket0), 0L, 8L));
}

/* The nodes of level >= bucket_level are leaves' buckets: arriving at one
 * from its parent, the walk takes every node of its subtree (at most
 * 2^(levels - bucket_level) - 1) in a plain loop and goes back up, instead
 * of deciding at each node where to go. Near the leaves a walk visits most
 * nodes anyway, and the loop has none of the walk's unpredictable branches:
 * 4 levels of buckets took 1e5 queries over 1e6 uniform 3-D points from
 * 362 node visits and 155 keys per query to 104 visits and 227 keys, 1.6x
 * faster. Which nodes are taken does not change the result: every node the
 * walk skips is still skipped only when its plane is beyond the K-th key.
 * A node above the buckets enters the list when the walk comes back from
 * its close child (every node does so exactly once, a missing close child
 * included), not on the way down: by then the list holds the query's
 * neighbourhood, and the far nodes of the descent fail one compare instead
 * of being sorted into a list they leave again (about 15 % less time, 1e5
 * queries over 1e6 points). */
__kernel void tq_knn(__global const tq_ref *tree, __global const uint *ids,
                     __global const uchar *split_dims, int has_dims, int rotation, ulong n,
                     int dim, __global const float *queries, __global const uint *order, ulong nq,
                     int k, int metric, uint bucket_level, ulong twos,
                     __global const tq_ref *bucket_pts, __global const uint *bucket_ids,
                     __global ulong *lists, __global float *out_keys, __global uint *out_index,
                     __global uint *work, __global const float *bounds, int has_bounds)
{
    const ulong qi = get_global_id(0);
    if (qi >= nq)
        return;
    /* Work-item qi walks the qi-th query in Morton order and writes its
     * list at the query's own place. */
    const ulong home = order[qi];
    __global const float *q = queries + home * (ulong)dim;
    __global ulong *list = lists + qi * (ulong)k;
    /* A bound (phase 2 of the spatial partition: the home list's K-th key)
     * starts the list full of (bound, LBK_NO_INDEX): only keys <= bound
     * enter, an equal key with any real row included, and the walk prunes
     * at the bound from its first node. Slots left are pads on the host
     * (their row is LBK_NO_INDEX). */
    const ulong start = has_bounds ? lbk_pack(bounds[home], LBK_NO_INDEX) : LBK_PACKED_PAD;
    for (int i = 0; i < k; i++)
        list[i] = start;
    ulong worst = start;

    /* The round-robin split dimension and the level follow the walk: +1
     * going down, -1 going up, so no clz or division per step; the root
     * splits dimension `rotation` (kdtree.h). */
    long prev = -1, curr = 0;
    int level_dim = rotation;
    uint level = 0;
    /* The query's work (LBK_TQ_WORK_*): private counts, one store each at
     * the end, so they cost no memory traffic in the walk and depend on
     * nothing but the query and the tree. */
    uint nodes = 0, evals = 0;
    const tq_evals_shape shape = tq_evals_shape_of(n, bucket_level);
    while (curr >= 0) {
        const long parent = ((curr + 1) >> 1) - 1;
        long next = parent;
        if ((ulong)curr < n) {
            const bool from_parent = prev < curr;
            if (from_parent && level >= bucket_level) {
                worst = tq_bucket(bucket_pts, bucket_ids, dim, q, metric, curr, bucket_level,
                                  twos, list, k, worst);
                nodes++;
                evals += tq_bucket_evals(&shape, curr);
            } else {
                __global const tq_ref *node = tree + (ulong)curr * (ulong)dim;
                const int sd = has_dims ? (int)split_dims[curr] : level_dim;
                const float delta = q[sd] - tq_load(node, sd);
                const long close_child = 2 * curr + (delta < 0.0f ? 1 : 2);
                const long far_child = 2 * curr + (delta < 0.0f ? 2 : 1);
                if (from_parent) {
                    next = close_child;
                    nodes++;
                } else if (prev == close_child) {
                    evals++;
                    worst = tq_insert(list, k, lbk_pack(tq_key(q, node, dim, metric), ids[curr]),
                                      worst);
                    if ((ulong)far_child < n && tq_visit_far(delta, metric, worst))
                        next = far_child;
                }
            }
        }
        if (next == parent) {
            level_dim = level_dim == 0 ? dim - 1 : level_dim - 1;
            level--;
        } else {
            level_dim = level_dim + 1 == dim ? 0 : level_dim + 1;
            level++;
        }
        prev = curr;
        curr = next;
    }
    work[home * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_NODES] = nodes;
    work[home * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_EVALS] = evals;
    for (int i = 0; i < k; i++) {
        const uint row = lbk_packed_index(list[i]);
        out_keys[home * (ulong)k + (ulong)i] =
            row == LBK_NO_INDEX ? LBK_INFINITY : lbk_packed_key(list[i]);
        out_index[home * (ulong)k + (ulong)i] = row;
    }
}

/* ---- radius search: every point whose key is <= the query's bound ----
 * The same walk as tq_knn's with the bound fixed instead of the K-th key,
 * and no list: each point inside is counted (mode 0) or written (mode 1) in
 * the walk's order, which depends on nothing but the query and the tree.
 * The fill writes the query's i-th point at flat position offsets[q] + i
 * when that lies in this launch's window [w0, w1), so that an output of any
 * size goes through a buffer of w1 - w0 entries in as many launches as it
 * takes, as a code (lbk_radius_code); a list that lies wholly in the window
 * and is short is sorted here, the others on the host. */
typedef struct {
    ulong found, base, w0, w1;
    __global ulong *codes;
} tq_ball;

static inline void tq_ball_take(tq_ball *b, float key, uint row)
{
    const ulong g = b->base + b->found++;
    if (g >= b->w0 && g < b->w1)
        b->codes[g - b->w0] = lbk_radius_code(key, row);
}

/* A bucket's points inside the ball; spare lanes (LBK_NO_INDEX) never are. */
static inline void tq_ball_bucket(__global const tq_ref *bucket_pts,
                                  __global const uint *bucket_ids, int dim,
                                  __global const float *q, int metric, long s, uint bucket_level,
                                  ulong twos, float bound, tq_ball *b)
{
    const ulong bk = (ulong)s + 1 - ((ulong)1 << bucket_level);
    const ulong first = lbk_tq_tile_start(bk, twos), end = first + (bk < twos ? 2 : 1);
    for (ulong t = first; t < end; t++) {
        __global const tq_ref *tp = bucket_pts + t * (ulong)dim * LBK_TREE_TILE_LANES;
        float8 key = (float8)(0.0f);
        for (int d = 0; d < dim; d++)
            key = tq_key_step8(key, (float8)(q[d]), tq_load8(d, tp), metric);
        uint bits = (key.s0 <= bound ? 1u : 0u) | (key.s1 <= bound ? 2u : 0u) |
                    (key.s2 <= bound ? 4u : 0u) | (key.s3 <= bound ? 8u : 0u) |
                    (key.s4 <= bound ? 16u : 0u) | (key.s5 <= bound ? 32u : 0u) |
                    (key.s6 <= bound ? 64u : 0u) | (key.s7 <= bound ? 128u : 0u);
        if (bits == 0)
            continue;
        float keys[LBK_TREE_TILE_LANES];
        vstore8(key, 0, keys);
        __global const uint *ti = bucket_ids + t * LBK_TREE_TILE_LANES;
        while (bits) {
            const uint j = 31u - clz(bits & (0u - bits));
            bits &= bits - 1u;
            if (ti[j] != LBK_NO_INDEX)
                tq_ball_take(b, keys[j], ti[j]);
        }
    }
}

__kernel void tq_radius(__global const tq_ref *tree, __global const uint *ids,
                        __global const uchar *split_dims, int has_dims, int rotation, ulong n,
                        int dim, __global const float *queries, __global const uint *order,
                        ulong nq, int metric, uint bucket_level, ulong twos,
                        __global const tq_ref *bucket_pts, __global const uint *bucket_ids,
                        __global const float *bounds, int mode, __global uint *counts,
                        __global const ulong *offsets, ulong w0, ulong w1,
                        __global ulong *out_codes, __global uint *work)
{
    const ulong qi = get_global_id(0);
    if (qi >= nq)
        return;
    const ulong home = order[qi];
    /* The fill walks only the queries with points in its window. */
    if (mode == 1 &&
        (offsets[home + 1] <= w0 || offsets[home] >= w1 || offsets[home + 1] == offsets[home]))
        return;
    __global const float *q = queries + home * (ulong)dim;
    const float bound = bounds[home];
    tq_ball b = {0, mode == 1 ? offsets[home] : 0, w0, mode == 1 ? w1 : 0, out_codes};
    /* The fill knows the count (the count walk's, exact): once that many
     * points are taken, the rest of the walk finds none. It walks on past
     * the window's end, so that its work counts do not depend on the
     * window. */
    const ulong end = mode == 1 ? offsets[home + 1] : 0;
    const ulong stop = mode == 1 ? end : ULONG_MAX;
    long prev = -1, curr = 0;
    int level_dim = rotation;
    uint level = 0;
    uint nodes = 0, evals = 0;
    const tq_evals_shape shape = tq_evals_shape_of(n, bucket_level);
    while (curr >= 0 && b.base + b.found < stop) {
        const long parent = ((curr + 1) >> 1) - 1;
        long next = parent;
        if ((ulong)curr < n) {
            const bool from_parent = prev < curr;
            if (from_parent && level >= bucket_level) {
                tq_ball_bucket(bucket_pts, bucket_ids, dim, q, metric, curr, bucket_level, twos,
                               bound, &b);
                nodes++;
                evals += tq_bucket_evals(&shape, curr);
            } else {
                __global const tq_ref *node = tree + (ulong)curr * (ulong)dim;
                const int sd = has_dims ? (int)split_dims[curr] : level_dim;
                const float delta = q[sd] - tq_load(node, sd);
                const long close_child = 2 * curr + (delta < 0.0f ? 1 : 2);
                const long far_child = 2 * curr + (delta < 0.0f ? 2 : 1);
                if (from_parent) {
                    next = close_child;
                    nodes++;
                } else if (prev == close_child) {
                    evals++;
                    const float key = tq_key(q, node, dim, metric);
                    if (key <= bound)
                        tq_ball_take(&b, key, ids[curr]);
                    /* The far side's keys are >= the plane's: ties at the
                     * bound are inside, so only a plane beyond it skips. */
                    const float plane =
                        metric == LBK_KERNEL_METRIC_L2 ? delta * delta : fabs(delta);
                    if ((ulong)far_child < n && plane <= bound)
                        next = far_child;
                }
            }
        }
        if (next == parent) {
            level_dim = level_dim == 0 ? dim - 1 : level_dim - 1;
            level--;
        } else {
            level_dim = level_dim + 1 == dim ? 0 : level_dim + 1;
            level++;
        }
        prev = curr;
        curr = next;
    }
    if (mode == 0)
        counts[home] = (uint)b.found;
    else if (b.base >= w0 && end <= w1 && end - b.base <= LBK_RADIUS_SORT_MAX)
        lbk_radius_sort_list(out_codes + (b.base - w0), (uint)(end - b.base));
    work[home * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_NODES] = nodes;
    work[home * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_EVALS] = evals;
}
