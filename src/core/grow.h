/* A host buffer that grows at least twofold, so that a sequence of slowly
 * rising sizes (one slice after another) does not reallocate each time. */
#ifndef LBK_GROW_H
#define LBK_GROW_H

#include "status.h"

#include <stddef.h>
#include <stdint.h>

/* *buffer (room elements of `size` bytes) holds at least `need` elements
 * after an LBK_OK; on failure it is left as it was and the error, naming
 * `what`, is logged. */
lbk_status lbk_grow_buffer(void **buffer, uint64_t *room, uint64_t need, size_t size,
                           const char *what);

#endif
