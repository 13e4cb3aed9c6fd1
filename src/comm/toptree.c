/* The top tree's shape, order, walks and box key: pure host code, shared by
 * the decomposition (decompose.c) and the query routing in src/app. */
#include "toptree.h"

#include "log.h"
#include "try.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int lbk_toptree_left_ranks(int ranks) { return (ranks + 1) / 2; }

uint64_t lbk_toptree_left_points(uint64_t points, int ranks)
{
    /* floor(n * a / p) without the 64-bit product: n = (n/p)*p + n%p. */
    const uint64_t p = (uint64_t)ranks, a = (uint64_t)lbk_toptree_left_ranks(ranks);
    return (points / p) * a + (points % p) * a / p;
}

lbk_status lbk_toptree_shape(lbk_toptree *tree, int ranks, int dim, uint64_t points)
{
    memset(tree, 0, sizeof *tree);
    LBK_FAIL_IF(ranks < 1 || dim < 1, LBK_ERR_INTERNAL, "top tree of %d ranks in %d dimensions",
                ranks, dim);
    tree->ranks = ranks;
    tree->dim = dim;
    tree->count = 2 * ranks - 1;
    tree->nodes = calloc((size_t)tree->count, sizeof *tree->nodes);
    tree->owned = calloc((size_t)ranks, sizeof *tree->owned);
    tree->lo = calloc((size_t)ranks * (size_t)dim, sizeof *tree->lo);
    tree->hi = calloc((size_t)ranks * (size_t)dim, sizeof *tree->hi);
    tree->node_lo = calloc((size_t)tree->count * (size_t)dim, sizeof *tree->node_lo);
    tree->node_hi = calloc((size_t)tree->count * (size_t)dim, sizeof *tree->node_hi);
    if (!tree->nodes || !tree->owned || !tree->lo || !tree->hi || !tree->node_lo ||
        !tree->node_hi) {
        lbk_toptree_free(tree);
        lbk_error("out of host memory for the top tree of %d ranks", ranks);
        return LBK_ERR_NOMEM;
    }
    /* Breadth first: a node's children are appended after every node made
     * so far, so parents come first and depths never decrease. */
    tree->nodes[0] = (lbk_toptree_node){0, ranks, points, 0, -1, -1, 0, 0, 0};
    int made = 1;
    for (int i = 0; i < made; i++) {
        lbk_toptree_node *n = &tree->nodes[i];
        if (n->ranks == 1)
            continue;
        const int lr = lbk_toptree_left_ranks(n->ranks);
        const uint64_t lp = lbk_toptree_left_points(n->points, n->ranks);
        n->left = made;
        n->right = made + 1;
        tree->nodes[made++] = (lbk_toptree_node){n->first, lr, lp, n->depth + 1, -1, -1, 0, 0, 0};
        tree->nodes[made++] = (lbk_toptree_node){
            n->first + lr, n->ranks - lr, n->points - lp, n->depth + 1, -1, -1, 0, 0, 0};
    }
    return LBK_OK;
}

void lbk_toptree_free(lbk_toptree *tree)
{
    free(tree->nodes);
    free(tree->owned);
    free(tree->lo);
    free(tree->hi);
    free(tree->node_lo);
    free(tree->node_hi);
    memset(tree, 0, sizeof *tree);
}

int lbk_toptree_leaf_depth(const lbk_toptree *tree, int rank)
{
    for (int i = 0; i < tree->count; i++)
        if (tree->nodes[i].ranks == 1 && tree->nodes[i].first == rank)
            return tree->nodes[i].depth;
    return 0;
}

int lbk_toptree_levels(const lbk_toptree *tree)
{
    int levels = 0;
    for (int i = 0; i < tree->count; i++)
        if (tree->nodes[i].ranks > 1 && tree->nodes[i].depth + 1 > levels)
            levels = tree->nodes[i].depth + 1;
    return levels;
}

float lbk_toptree_order_float(uint32_t image)
{
    const uint32_t bits = image & 0x80000000u ? image & 0x7fffffffu : ~image;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

int lbk_toptree_owner(const lbk_toptree *tree, const float *point, uint64_t id)
{
    const lbk_toptree_node *n = &tree->nodes[0];
    while (n->ranks > 1) {
        const uint32_t image = lbk_toptree_order_image(point[n->dim]);
        n = &tree->nodes[lbk_toptree_goes_left(n, image, id) ? n->left : n->right];
    }
    return n->first;
}

int lbk_toptree_home(const lbk_toptree *tree, const float *query)
{
    const lbk_toptree_node *n = &tree->nodes[0];
    while (n->ranks > 1) {
        /* The right child always holds points (the plane's own point at
         * least) when its parent does; the left one may be empty. */
        const lbk_toptree_node *left = &tree->nodes[n->left];
        const bool go_left =
            left->points > 0 && query[n->dim] < lbk_toptree_order_float(n->image);
        n = go_left ? left : &tree->nodes[n->right];
    }
    return n->first;
}

/* Subnormal results count as 0: never above what a flushing device gets. */
static float flush(float x) { return x < FLT_MIN ? 0.0f : x; }

float lbk_toptree_box_key(const float *query, const float *lo, const float *hi, int dim,
                          lbk_metric metric)
{
    float s = 0.0f;
    for (int j = 0; j < dim; j++) {
        float gap = 0.0f;
        const float below = lo[j] - query[j], above = query[j] - hi[j];
        if (below > gap)
            gap = below;
        if (above > gap)
            gap = above;
        gap = flush(gap);
        if (metric == LBK_METRIC_L2) {
            /* The product rounded on its own, as in the engines (no FMA). */
            volatile float sq = gap * gap;
            s = flush(s + flush(sq));
        } else if (metric == LBK_METRIC_L1) {
            s = flush(s + gap);
        } else if (metric == LBK_METRIC_LINF) {
            s = gap > s ? gap : s;
        } else {
            return -INFINITY; /* no box bound (cosine, ip): every box may hold one */
        }
    }
    return s;
}

void lbk_toptree_set_node_boxes(lbk_toptree *tree)
{
    const size_t dim = (size_t)tree->dim;
    /* Children come after their parents: fill from the last node up. */
    for (int i = tree->count - 1; i >= 0; i--) {
        const lbk_toptree_node *n = &tree->nodes[i];
        float *lo = tree->node_lo + (size_t)i * dim, *hi = tree->node_hi + (size_t)i * dim;
        if (n->ranks == 1) {
            memcpy(lo, tree->lo + (size_t)n->first * dim, dim * sizeof *lo);
            memcpy(hi, tree->hi + (size_t)n->first * dim, dim * sizeof *hi);
            continue;
        }
        const float *llo = tree->node_lo + (size_t)n->left * dim;
        const float *lhi = tree->node_hi + (size_t)n->left * dim;
        const float *rlo = tree->node_lo + (size_t)n->right * dim;
        const float *rhi = tree->node_hi + (size_t)n->right * dim;
        for (size_t j = 0; j < dim; j++) {
            lo[j] = llo[j] < rlo[j] ? llo[j] : rlo[j];
            hi[j] = lhi[j] > rhi[j] ? lhi[j] : rhi[j];
        }
    }
}

int lbk_toptree_near(const lbk_toptree *tree, const float *query, float bound, lbk_metric metric,
                     int skip, int *out)
{
    /* Depth first, left before right: the ranks come out ascending. The
     * stack never holds more than one pending right child per level. */
    const size_t dim = (size_t)tree->dim;
    int stack[2 * 64], top = 0, found = 0;
    stack[top++] = 0;
    while (top > 0) {
        const int i = stack[--top];
        const lbk_toptree_node *n = &tree->nodes[i];
        if (n->points == 0 || (n->ranks == 1 && (n->first == skip || tree->owned[n->first] == 0)))
            continue;
        if (lbk_toptree_box_key(query, tree->node_lo + (size_t)i * dim,
                                tree->node_hi + (size_t)i * dim, tree->dim, metric) > bound)
            continue;
        if (n->ranks == 1) {
            out[found++] = n->first;
            continue;
        }
        stack[top++] = n->right;
        stack[top++] = n->left;
    }
    return found;
}
