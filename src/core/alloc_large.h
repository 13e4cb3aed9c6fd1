/* Large host arrays (inputs, K-lists, results) on transparent huge pages. */
#ifndef LBK_ALLOC_LARGE_H
#define LBK_ALLOC_LARGE_H

#include <stddef.h>

/* Like malloc (free with free()), but an array of at least
 * LBK_LARGE_BYTES is aligned to 2 MiB and marked for huge pages: its first
 * touch then faults once per 2 MiB instead of once per 4 KiB. */
#define LBK_LARGE_BYTES ((size_t)4 << 20)
void *lbk_alloc_large(size_t bytes);

#endif
