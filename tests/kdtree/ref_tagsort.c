#include "ref_tagsort.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ref_subtree_sizes(uint64_t n, uint64_t *size)
{
    for (uint64_t s = n; s-- > 0;) {
        const uint64_t l = 2 * s + 1, r = 2 * s + 2;
        size[s] = 1 + (l < n ? size[l] : 0) + (r < n ? size[r] : 0);
    }
}

static int depth(uint64_t s)
{
    int d = 0;
    while (s > 0) {
        s = (s - 1) / 2;
        d++;
    }
    return d;
}

typedef struct {
    uint32_t tag;
    uint32_t row;
    uint8_t dim;
} item;

/* qsort has no context argument; the reference is single-threaded. */
static const float *g_points;
static int g_dim;
static int g_split;

static int item_dim(const item *it) { return g_split ? it->dim : depth(it->tag) % g_dim; }

static int item_cmp(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    const int j = item_dim(a);
    const float x = g_points[(size_t)a->row * g_dim + j];
    const float y = g_points[(size_t)b->row * g_dim + j];
    if (x != y)
        return x < y ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static int widest(const float *lo, const float *hi, int dim)
{
    int best = 0;
    float w = -INFINITY;
    for (int j = 0; j < dim; j++) {
        if (hi[j] - lo[j] >= w) {
            w = hi[j] - lo[j];
            best = j;
        }
    }
    return best;
}

int ref_tagsort_build(const float *points, uint32_t n, int dim, int split, float *tree,
                      uint32_t *rows, uint8_t *split_dims)
{
    if (n == 0)
        return 0;
    item *it = malloc(n * sizeof *it);
    uint64_t *size = malloc(n * sizeof *size);
    uint64_t *seg = malloc(n * sizeof *seg);
    float *box = malloc((size_t)n * 2 * dim * sizeof *box); /* per node: lo[dim], hi[dim] */
    if (!it || !size || !seg || !box) {
        free(it);
        free(size);
        free(seg);
        free(box);
        return -1;
    }
    ref_subtree_sizes(n, size);
    int levels = 0;
    while (((uint64_t)1 << levels) <= n)
        levels++;
    float *root = box;
    for (int j = 0; j < dim; j++)
        root[j] = root[dim + j] = points[j];
    for (uint32_t i = 1; i < n; i++)
        for (int j = 0; j < dim; j++) {
            const float v = points[(size_t)i * dim + j];
            root[j] = v < root[j] ? v : root[j];
            root[dim + j] = v > root[dim + j] ? v : root[dim + j];
        }
    const int first_dim = widest(root, root + dim, dim);
    for (uint32_t i = 0; i < n; i++)
        it[i] = (item){0, i, (uint8_t)first_dim};
    g_points = points;
    g_dim = dim;
    g_split = split;

    for (int l = 0; l + 1 < levels; l++) {
        const uint64_t first = ((uint64_t)1 << l) - 1;
        const uint64_t lo = l == 0 ? 0 : ((uint64_t)1 << (l - 1)) - 1;
        qsort(it + lo, n - lo, sizeof *it, item_cmp);
        /* Segment begins: settled nodes first, then level-l subtrees in order. */
        uint64_t pos = first;
        for (uint64_t s = first; s < 2 * first + 1 && s < n; s++) {
            seg[s] = pos;
            pos += size[s];
        }
        for (uint64_t s = first; s < 2 * first + 1 && s < n; s++) {
            const uint64_t p = seg[s] + (2 * s + 1 < n ? size[2 * s + 1] : 0);
            const int ds = it[p].dim;
            const float plane = points[(size_t)it[p].row * dim + item_dim(&it[p])];
            for (int c = 0; c < 2; c++) {
                const uint64_t child = 2 * s + 1 + (uint64_t)c;
                if (child >= n)
                    continue;
                float *cb = box + child * 2 * (uint64_t)dim;
                memcpy(cb, box + s * 2 * (uint64_t)dim, 2 * (size_t)dim * sizeof *cb);
                if (split) {
                    if (c == 0)
                        cb[dim + ds] = plane < cb[dim + ds] ? plane : cb[dim + ds];
                    else
                        cb[ds] = plane > cb[ds] ? plane : cb[ds];
                }
            }
        }
        for (uint64_t i = first; i < n; i++) {
            const uint64_t s = it[i].tag;
            const uint64_t p = seg[s] + (2 * s + 1 < n ? size[2 * s + 1] : 0);
            if (i == p)
                continue;
            const uint64_t c = i < p ? 2 * s + 1 : 2 * s + 2;
            it[i].tag = (uint32_t)c;
            if (split) {
                const float *cb = box + c * 2 * (uint64_t)dim;
                it[i].dim = (uint8_t)widest(cb, cb + dim, dim);
            }
        }
    }
    qsort(it, n, sizeof *it, item_cmp);
    for (uint32_t i = 0; i < n; i++) {
        if (it[i].tag != i) {
            free(it);
            free(size);
            free(seg);
            free(box);
            return -2; /* the reference itself is broken */
        }
        memcpy(tree + (size_t)i * dim, points + (size_t)it[i].row * dim,
               (size_t)dim * sizeof *tree);
        rows[i] = it[i].row;
        split_dims[i] = split ? it[i].dim : (uint8_t)(depth(i) % dim);
    }
    free(it);
    free(size);
    free(seg);
    free(box);
    return 0;
}
