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

int lbk_row_split_owner(uint64_t n, int p, uint64_t row)
{
    /* The ranges differ in length by at most one row, so the guess from the
     * mean length is within one rank of the owner. */
    const uint64_t up = (uint64_t)p;
    uint64_t r = (uint64_t)((double)row / (double)n * (double)up);
    r = r >= up ? up - 1 : r;
    while (r > 0 && start_of(n, up, r) > row)
        r--;
    while (r + 1 < up && start_of(n, up, r + 1) <= row)
        r++;
    return (int)r;
}
