/* The one split of n rows over p ranks: rank r holds rows [n*r/p,
 * n*(r+1)/p) (the rows a rank reads of a file, its slice of the queries,
 * of a merge's lists and of a graph's rows), exact for any n below 2^64
 * (n*r is never formed); and the inverse of any split into ranges, the
 * rank that holds a row. */
#ifndef LBK_ROW_SPLIT_H
#define LBK_ROW_SPLIT_H

#include <stdint.h>

/* Rank r's rows of n over p ranks: [*first, *first + *count). */
void lbk_row_split_range(uint64_t n, int p, int r, uint64_t *first, uint64_t *count);

/* The starts of a split of n rows into p ranges (p + 1 entries, the last
 * n): `given`'s, copied, or (NULL) the even split's. */
void lbk_row_split_starts(uint64_t n, int p, const uint64_t *given, uint64_t *starts);

/* The rank whose range holds `row` of a split into p ranges: rank r holds
 * [starts[r], starts[r + 1]) (starts[0] = 0, nondecreasing, row <
 * starts[p]); a rank with an empty range is passed over. */
int lbk_row_split_find(const uint64_t *starts, int p, uint64_t row);

#endif
