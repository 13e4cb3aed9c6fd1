/* The kernels/ directory, embedded at build time (cmake/embed_kernels.cmake)
 * so the binary needs no files beside it. */
#ifndef LBK_EMBEDDED_KERNELS_H
#define LBK_EMBEDDED_KERNELS_H

#include <stddef.h>

typedef struct {
    const char *name;   /* file name, e.g. "brute.cl" or "lbk_shared.h" */
    const char *source; /* NUL-terminated */
    size_t length;
} lbk_embedded_kernels_file;

extern const lbk_embedded_kernels_file lbk_embedded_kernels_files[];
extern const size_t lbk_embedded_kernels_count;

/* NULL when no such file was embedded. */
const lbk_embedded_kernels_file *lbk_embedded_kernels_find(const char *name);

#endif
