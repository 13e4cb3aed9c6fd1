/* Tree kNN: Wald's stack-free traversal of a left-balanced k-d tree
 * (arXiv 2210.12859), one work-item per query.
 *
 * The K best so far live in the query's slice of `lists` as packed keys
 * (float bits of key << 32 | original shard row): keys are non-negative, so
 * integer order is (key, row) order and one compare orders both. The list is
 * in global memory, not a private array, so K is not bounded by registers
 * or stack. */

#define TQ_PAD (((ulong)0x7f800000u << 32) | (ulong)LBK_NO_INDEX)

static inline float tq_key(__global const float *q, __global const float *r, int dim,
                           int metric)
{
    float s = 0.0f;
    if (metric == LBK_KERNEL_METRIC_L2) {
        for (int j = 0; j < dim; j++) {
            const float d = q[j] - r[j];
            s = s + d * d;
        }
    } else if (metric == LBK_KERNEL_METRIC_L1) {
        for (int j = 0; j < dim; j++)
            s = s + fabs(q[j] - r[j]);
    } else {
        for (int j = 0; j < dim; j++)
            s = fmax(s, fabs(q[j] - r[j]));
    }
    return s;
}

__kernel void tq_knn(__global const float *tree, __global const uint *ids,
                     __global const uchar *split_dims, int has_dims, ulong n, int dim,
                     __global const float *queries, ulong nq, int k, int metric,
                     __global ulong *lists)
{
    const ulong qi = get_global_id(0);
    if (qi >= nq)
        return;
    __global const float *q = queries + qi * (ulong)dim;
    __global ulong *list = lists + qi * (ulong)k;
    for (int i = 0; i < k; i++)
        list[i] = TQ_PAD;
    ulong worst = TQ_PAD;

    /* The round-robin split dimension follows the walk: +1 going down, -1
     * going up, so no clz or division per step. */
    long prev = -1, curr = 0;
    int level_dim = 0;
    while (curr >= 0) {
        const long parent = ((curr + 1) >> 1) - 1;
        if ((ulong)curr >= n) {
            prev = curr;
            curr = parent;
            level_dim = level_dim == 0 ? dim - 1 : level_dim - 1;
            continue;
        }
        const bool from_parent = prev < curr;
        __global const float *node = tree + (ulong)curr * (ulong)dim;
        if (from_parent) {
            const float key = tq_key(q, node, dim, metric);
            const ulong packed = ((ulong)as_uint(key) << 32) | (ulong)ids[curr];
            if (packed < worst) {
                int pos = k - 1;
                while (pos > 0 && list[pos - 1] > packed) {
                    list[pos] = list[pos - 1];
                    pos--;
                }
                list[pos] = packed;
                worst = list[k - 1];
            }
        }
        const int sd = has_dims ? (int)split_dims[curr] : level_dim;
        const float delta = q[sd] - node[sd];
        const long close_child = 2 * curr + (delta < 0.0f ? 1 : 2);
        const long far_child = 2 * curr + (delta < 0.0f ? 2 : 1);
        long next;
        if (from_parent) {
            next = close_child;
        } else if (prev == close_child) {
            /* The far side holds keys >= the plane key (rounding is monotone),
             * so it is skipped only when that is strictly worse than the
             * current K-th: an equal key with a smaller row must still be
             * found. */
            const float plane = metric == LBK_KERNEL_METRIC_L2 ? delta * delta : fabs(delta);
            const float kth = as_float((uint)(worst >> 32));
            next = ((ulong)far_child < n && plane <= kth) ? far_child : parent;
        } else {
            next = parent;
        }
        if (next == parent)
            level_dim = level_dim == 0 ? dim - 1 : level_dim - 1;
        else
            level_dim = level_dim + 1 == dim ? 0 : level_dim + 1;
        prev = curr;
        curr = next;
    }
}
