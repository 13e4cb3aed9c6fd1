/* Test-side oracle for K-list merges: build lists by sorting everything and
 * taking the first K, with its own comparison, so the merge under test is
 * checked against code it does not share. */
#ifndef LBK_TEST_CAND_ORACLE_H
#define LBK_TEST_CAND_ORACLE_H

#include "knn.h"
#include "lbk_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A pure function of x (splitmix64's first draw for seed x). */
static inline uint64_t co_mix(uint64_t x) { return lbk_test_mix64(x); }

/* The candidate of reference `id` for query `q`: a key with few distinct
 * values when `levels` > 0 (many ties, so the id order matters), else a
 * near-continuous one. */
static inline lbk_knn_candidate co_candidate(uint64_t seed, uint64_t q, uint64_t id, int levels)
{
    uint64_t h = co_mix(seed ^ co_mix(q * UINT64_C(1000003) + id));
    lbk_knn_candidate c;
    c.key = levels > 0 ? (float)(h % (uint64_t)levels) * 0.25f
                       : (float)(h >> 40) / (float)(UINT64_C(1) << 24);
    c.label = (int32_t)(id % 7);
    c.id = id;
    return c;
}

static inline lbk_knn_candidate co_pad(void)
{
    lbk_knn_candidate c = {INFINITY, -1, UINT64_MAX};
    return c;
}

static int co_cmp(const void *pa, const void *pb)
{
    const lbk_knn_candidate *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return 0;
}

/* Sort `n` candidates (scratch is reordered) and write the first k, padded. */
static inline void co_take_k(lbk_knn_candidate *scratch, size_t n, int k, lbk_knn_candidate *out)
{
    qsort(scratch, n, sizeof *scratch, co_cmp);
    for (int i = 0; i < k; i++)
        out[i] = (size_t)i < n ? scratch[i] : co_pad();
}

/* K-list of query q over the references [lo, hi). scratch holds hi - lo. */
static inline void co_list(uint64_t seed, uint64_t q, uint64_t lo, uint64_t hi, int levels, int k,
                           lbk_knn_candidate *scratch, lbk_knn_candidate *out)
{
    for (uint64_t id = lo; id < hi; id++)
        scratch[id - lo] = co_candidate(seed, q, id, levels);
    co_take_k(scratch, (size_t)(hi - lo), k, out);
}

static inline int co_same(const lbk_knn_candidate *a, const lbk_knn_candidate *b)
{
    return memcmp(&a->key, &b->key, sizeof a->key) == 0 && a->label == b->label && a->id == b->id;
}

/* Expects got to equal want slot for slot (co_same); on the first slot that
 * differs, reports its fields, each with what, and returns 0. */
static inline int co_expect_lists(const lbk_knn_candidate *got, const lbk_knn_candidate *want,
                                  int k, const char *what)
{
    for (int i = 0; i < k; i++) {
        if (co_same(&got[i], &want[i]))
            continue;
        LBK_EXPECT_EQ_FLOAT(got[i].key, want[i].key, "%s: slot %d", what, i);
        LBK_EXPECT_EQ_INT(got[i].label, want[i].label, "%s: slot %d", what, i);
        LBK_EXPECT_EQ_U64(got[i].id, want[i].id, "%s: slot %d", what, i);
        return 0;
    }
    return 1;
}

#endif
