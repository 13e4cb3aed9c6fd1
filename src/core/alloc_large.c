/* madvise and MADV_HUGEPAGE are not POSIX. */
#define _DEFAULT_SOURCE
#include "alloc_large.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Writing 100k queries' K = 16 lists and results (51 MB) into fresh 4 KiB
 * pages took 40-50 ms of a 0.26 s tree query phase in page faults, under a
 * kernel whose transparent huge pages are "madvise" (Debian's default). */
#define HUGE_PAGE ((size_t)2 << 20)

void *lbk_alloc_large(size_t bytes)
{
    if (bytes < LBK_LARGE_BYTES)
        return malloc(bytes ? bytes : 1);
    if (bytes > SIZE_MAX - HUGE_PAGE)
        return NULL;
    const size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Advice only: where huge pages are off or unavailable, plain pages. */
    (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}
