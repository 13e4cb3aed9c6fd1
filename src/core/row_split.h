/* The one split of n rows over p ranks: rank r holds rows [n*r/p,
 * n*(r+1)/p) (the rows a rank reads of a file, its slice of the queries,
 * of a merge's lists and of a graph's rows), and its inverse, the rank that
 * holds a row. Exact for any n below 2^64 (n*r is never formed). */
#ifndef LBK_ROW_SPLIT_H
#define LBK_ROW_SPLIT_H

#include <stdint.h>

/* Rank r's rows of n over p ranks: [*first, *first + *count). */
void lbk_row_split_range(uint64_t n, int p, int r, uint64_t *first, uint64_t *count);

/* The rank whose range holds `row` (row < n). */
int lbk_row_split_owner(uint64_t n, int p, uint64_t row);

#endif
