#include "row_split.h"

/* floor(n * r / p), without the product: n = q p + m gives q r + m r / p. */
static uint64_t start_of(uint64_t n, uint64_t p, uint64_t r)
{
    return (n / p) * r + (n % p) * r / p;
}

void lbk_row_split_range(uint64_t n, int p, int r, uint64_t *first, uint64_t *count)
{
    const uint64_t lo = start_of(n, (uint64_t)p, (uint64_t)r);
    *first = lo;
    *count = start_of(n, (uint64_t)p, (uint64_t)r + 1) - lo;
}

void lbk_row_split_starts(uint64_t n, int p, const uint64_t *given, uint64_t *starts)
{
    for (int r = 0; r <= p; r++)
        starts[r] = given ? given[r] : start_of(n, (uint64_t)p, (uint64_t)r);
}

int lbk_row_split_find(const uint64_t *starts, int p, uint64_t row)
{
    /* The last rank whose range starts at or before the row. */
    int lo = 0, hi = p - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (starts[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}
