#include "knn.h"

void lbk_knn_merge(const lbk_knn_candidate *a, const lbk_knn_candidate *b, lbk_knn_candidate *out,
                   int k)
{
    int i = 0, j = 0;
    for (int n = 0; n < k; n++) {
        /* On a tie (only identical padding slots compare equal) take from a:
         * the bytes are the same either way, so the merge is commutative.
         * (A select instead of the branch measured no faster: bench/
         * scaling_merge.c, about 90 ns per pair of random K = 16 lists.) */
        if (lbk_knn_candidate_cmp(&a[i], &b[j]) <= 0)
            out[n] = a[i++];
        else
            out[n] = b[j++];
    }
}

void lbk_knn_merge_into(const lbk_knn_candidate *a, lbk_knn_candidate *b, int k)
{
    /* na = how many of the K best come from a: the smallest na with
     * b[k-1-na] <= a[na] (a predicate that only turns true as na grows), by
     * bisection. Then those are merged from the back, where the write
     * position never overtakes b's unread part (it is always at or past it).
     * Candidates that compare equal are identical pads, so which list one
     * comes from does not change a byte. */
    int lo = 0, hi = k;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (lbk_knn_candidate_cmp(&b[k - 1 - mid], &a[mid]) <= 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    int i = lo - 1, j = k - lo - 1;
    for (int w = k - 1; w >= 0; w--) {
        if (j < 0 || (i >= 0 && lbk_knn_candidate_cmp(&a[i], &b[j]) > 0))
            b[w] = a[i--];
        else
            b[w] = b[j--];
    }
}
