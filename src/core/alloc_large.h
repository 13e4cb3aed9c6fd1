/* Large host arrays (inputs, K-lists, results, layouts) on transparent huge
 * pages, with a debug mode that makes every overrun of them fault. */
#ifndef LBK_ALLOC_LARGE_H
#define LBK_ALLOC_LARGE_H

#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Like malloc, but an array of at least LBK_ALLOC_LARGE_BYTES is aligned to
 * 2 MiB and marked for huge pages: its first touch then faults once per
 * 2 MiB instead of once per 4 KiB. Free it with lbk_alloc_large_free (never with
 * free: in guard mode it is not malloc's).
 *
 * Guard mode (environment LBKNN_GUARD_PAGES=1, read at the first call):
 * every array, whatever its size, is placed so that its last byte is the
 * last byte before a PROT_NONE page, so a read or write past its end
 * faults on every machine, wherever the heap happens to end. The start is
 * then aligned only as the size is (a multiple of the element size). */
void *lbk_alloc_large(size_t bytes);

/* lbk_alloc_large of count x size bytes, or NULL with "out of host memory
 * for WHAT (N bytes)" logged and *st set to LBK_ERR_NOMEM (also when the
 * product overflows). */
void *lbk_alloc_large_logged(uint64_t count, size_t size, const char *what, lbk_status *st);

/* Frees what lbk_alloc_large returned (or malloc: a pointer this module did
 * not map goes to free); NULL is a no-op. */
void lbk_alloc_large_free(void *p);

/* Whether guard mode is on (for the tests that check it). */
bool lbk_alloc_large_guarded(void);

#define LBK_ALLOC_LARGE_BYTES ((size_t)4 << 20)

#endif
