/* lbk_knn_merge alone, against the sort-and-take-K oracle. One behaviour per
 * command-line case so that CTest reports each on its own. */
#include "cand_oracle.h"
#include "knn.h"
#include "lbk_test.h"

#include <stdio.h>
#include <stdlib.h>

#define KMAX 64
#define NMAX 200

/* A K-list over a random subset of ids [base, base + n) (a "shard"). */
static void shard_list(uint64_t seed, uint64_t base, uint64_t n, int levels, int k,
                       lbk_knn_candidate *out)
{
    lbk_knn_candidate scratch[NMAX];
    co_list(seed, 0, base, base + n, levels, k, scratch, out);
}

/* The oracle: both shards' points together, sorted, first K. */
static void oracle_two(uint64_t seed, uint64_t base_a, uint64_t na, uint64_t base_b, uint64_t nb,
                       int levels, int k, lbk_knn_candidate *out)
{
    lbk_knn_candidate scratch[2 * NMAX];
    for (uint64_t i = 0; i < na; i++)
        scratch[i] = co_candidate(seed, 0, base_a + i, levels);
    for (uint64_t i = 0; i < nb; i++)
        scratch[na + i] = co_candidate(seed, 0, base_b + i, levels);
    co_take_k(scratch, (size_t)(na + nb), k, out);
}

static void case_oracle(void)
{
    lbk_knn_candidate a[KMAX], b[KMAX], got[KMAX], want[KMAX];
    for (uint64_t seed = 1; seed <= 300; seed++) {
        int k = 1 + (int)(co_mix(seed) % KMAX);
        uint64_t na = co_mix(seed + 7) % (NMAX / 2), nb = co_mix(seed + 9) % (NMAX / 2);
        int levels = seed % 2 ? 5 : 0;
        /* Shard b's ids come first half the time, so order of ids and of
         * arguments are independent. */
        uint64_t base_a = seed % 4 < 2 ? 0 : nb, base_b = seed % 4 < 2 ? na : 0;
        shard_list(seed, base_a, na, levels, k, a);
        shard_list(seed, base_b, nb, levels, k, b);
        lbk_knn_merge(a, b, got, k);
        oracle_two(seed, base_a, na, base_b, nb, levels, k, want);
        char what[96];
        snprintf(what, sizeof what, "seed %llu k %d na %llu nb %llu", (unsigned long long)seed, k,
                 (unsigned long long)na, (unsigned long long)nb);
        co_expect_lists(got, want, k, what);
    }
}

static void case_commutative(void)
{
    lbk_knn_candidate a[KMAX], b[KMAX], ab[KMAX], ba[KMAX];
    for (uint64_t seed = 1; seed <= 300; seed++) {
        int k = 1 + (int)(co_mix(seed) % KMAX);
        uint64_t na = co_mix(seed + 1) % NMAX / 2, nb = co_mix(seed + 2) % NMAX / 2;
        shard_list(seed, 0, na, 3, k, a);
        shard_list(seed, na, nb, 3, k, b);
        lbk_knn_merge(a, b, ab, k);
        lbk_knn_merge(b, a, ba, k);
        char what[64];
        snprintf(what, sizeof what, "a+b vs b+a, seed %llu k %d", (unsigned long long)seed, k);
        co_expect_lists(ab, ba, k, what);
    }
}

static void case_associative(void)
{
    lbk_knn_candidate a[KMAX], b[KMAX], c[KMAX], t[KMAX], left[KMAX], right[KMAX];
    for (uint64_t seed = 1; seed <= 300; seed++) {
        int k = 1 + (int)(co_mix(seed) % KMAX);
        uint64_t na = co_mix(seed + 1) % 70, nb = co_mix(seed + 2) % 70,
                 nc = co_mix(seed + 3) % 70;
        int levels = seed % 3 ? 4 : 0;
        shard_list(seed, 0, na, levels, k, a);
        shard_list(seed, na, nb, levels, k, b);
        shard_list(seed, na + nb, nc, levels, k, c);
        lbk_knn_merge(a, b, t, k);
        lbk_knn_merge(t, c, left, k);
        lbk_knn_merge(b, c, t, k);
        lbk_knn_merge(a, t, right, k);
        char what[64];
        snprintf(what, sizeof what, "(a+b)+c vs a+(b+c), seed %llu k %d",
                 (unsigned long long)seed, k);
        co_expect_lists(left, right, k, what);
    }
}

static void case_padding(void)
{
    enum { K = 8 };
    lbk_knn_candidate pads[K], a[K], got[K];
    for (int i = 0; i < K; i++)
        pads[i] = co_pad();
    /* Two empty shards stay empty. */
    lbk_knn_merge(pads, pads, got, K);
    co_expect_lists(got, pads, K, "pad+pad");
    /* Three real points plus an empty shard: the three, then padding. */
    shard_list(5, 10, 3, 0, K, a);
    lbk_knn_merge(pads, a, got, K);
    co_expect_lists(got, a, K, "pad+list vs list");
    lbk_knn_merge(a, pads, got, K);
    co_expect_lists(got, a, K, "list+pad vs list");
    /* Padding at the end. */
    LBK_EXPECT_U64(got[2].id, !=, UINT64_MAX);
    LBK_EXPECT_EQ_U64(got[3].id, UINT64_MAX);
    LBK_EXPECT_EQ_INT(got[7].label, -1);
}

static void case_ties(void)
{
    enum { K = 6 };
    /* All keys equal: the merged list is the K smallest ids, whichever list
     * they come from. */
    lbk_knn_candidate a[K], b[K], got[K];
    uint64_t ida[K] = {1, 4, 5, 8, 20, 21}, idb[K] = {0, 2, 3, 9, 10, 11};
    for (int i = 0; i < K; i++) {
        a[i] = (lbk_knn_candidate){1.5f, 1, ida[i]};
        b[i] = (lbk_knn_candidate){1.5f, 2, idb[i]};
    }
    lbk_knn_merge(a, b, got, K);
    uint64_t want[K] = {0, 1, 2, 3, 4, 5};
    for (int i = 0; i < K; i++) {
        LBK_EXPECT_EQ_U64(got[i].id, want[i], "slot %d", i);
        LBK_EXPECT_EQ_INT(got[i].label, want[i] == 1 || want[i] >= 4 ? 1 : 2, "slot %d", i);
    }
    /* A smaller key beats a smaller id. */
    a[0] = (lbk_knn_candidate){0.5f, 1, 99};
    lbk_knn_merge(a, b, got, K);
    LBK_EXPECT_EQ_U64(got[0].id, 99, "key must come before id");
    LBK_EXPECT_EQ_U64(got[1].id, 0, "key must come before id");
}

static void case_k1(void)
{
    lbk_knn_candidate a = {2.0f, 3, 7}, b = {2.0f, 4, 6}, c = {1.0f, 5, 100}, got;
    lbk_knn_merge(&a, &b, &got, 1);
    LBK_EXPECT_EQ_U64(got.id, 6, "K=1 tie");
    LBK_EXPECT_EQ_INT(got.label, 4, "K=1 tie");
    lbk_knn_merge(&a, &c, &got, 1);
    LBK_EXPECT_EQ_U64(got.id, 100, "K=1");
    lbk_knn_candidate pad = co_pad();
    lbk_knn_merge(&pad, &a, &got, 1);
    LBK_EXPECT_EQ_U64(got.id, 7, "K=1 with pad");
}

/* lbk_knn_merge_into (the MPI operator's in-place merge) against the
 * oracle, with negative keys (inner products), padding and ties, up to the
 * largest K. */
static void merge_into_case(uint64_t seed, int k, uint64_t na, uint64_t nb, int levels)
{
    lbk_knn_candidate *scratch = malloc((size_t)(na + nb + 1) * sizeof *scratch);
    lbk_knn_candidate *a = malloc((size_t)k * sizeof *a), *b = malloc((size_t)k * sizeof *b);
    lbk_knn_candidate *want = malloc((size_t)k * sizeof *want);
    LBK_ASSERT_TRUE(scratch && a && b && want, "out of memory");
    for (uint64_t i = 0; i < na + nb; i++) {
        scratch[i] = co_candidate(seed, 0, i, levels);
        scratch[i].key -= 0.5f; /* negative keys, as ip and cosine have */
    }
    co_take_k(scratch, (size_t)(na + nb), k, want);
    for (uint64_t i = 0; i < na + nb; i++) {
        scratch[i] = co_candidate(seed, 0, i, levels);
        scratch[i].key -= 0.5f;
    }
    co_take_k(scratch, (size_t)na, k, a);
    co_take_k(scratch + na, (size_t)nb, k, b);
    lbk_knn_merge_into(a, b, k);
    char what[96];
    snprintf(what, sizeof what, "into: seed %llu k %d na %llu nb %llu", (unsigned long long)seed,
             k, (unsigned long long)na, (unsigned long long)nb);
    co_expect_lists(b, want, k, what);
    free(scratch);
    free(a);
    free(b);
    free(want);
}

static void case_into(void)
{
    for (uint64_t seed = 1; seed <= 300; seed++) {
        const int k = 1 + (int)(co_mix(seed) % KMAX);
        merge_into_case(seed, k, co_mix(seed + 7) % (NMAX / 2), co_mix(seed + 9) % (NMAX / 2),
                        seed % 2 ? 5 : 0);
    }
}

static void case_into_k4096(void)
{
    merge_into_case(1, LBK_K_MAX, 5000, 6000, 0);
    merge_into_case(2, LBK_K_MAX, 5000, 6000, 7); /* ties everywhere */
    merge_into_case(3, LBK_K_MAX, 100, 3000, 0);  /* padding in both */
    merge_into_case(4, LBK_K_MAX, 0, 9000, 0);    /* one empty shard */
}

static const lbk_test_case cases[] = {
    {"oracle", case_oracle},
    {"commutative", case_commutative},
    {"associative", case_associative},
    {"padding", case_padding},
    {"ties", case_ties},
    {"k1", case_k1},
    {"into", case_into},
    {"into_k4096", case_into_k4096},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
