#include "grow.h"

#include "log.h"
#include "try.h"

#include <stdlib.h>

lbk_status lbk_grow_buffer(void **buffer, uint64_t *room, uint64_t need, size_t size,
                           const char *what)
{
    if (need <= *room)
        return LBK_OK;
    const uint64_t want = need > 2 * *room ? need : 2 * *room;
    void *bigger = realloc(*buffer, (size_t)want * size);
    LBK_FAIL_IF(!bigger, LBK_ERR_NOMEM, "out of host memory for %llu %s",
                (unsigned long long)want, what);
    *buffer = bigger;
    *room = want;
    return LBK_OK;
}
