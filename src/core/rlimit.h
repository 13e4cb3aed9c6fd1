/* The process's resource limits that MPI and OpenCL runtimes meet with
 * aborts or pages of messages: the address-space limit (RLIMIT_AS: `ulimit
 * -v`, SGE's h_vmem) and the file-size limit (RLIMIT_FSIZE: `ulimit -f`).
 * Under an address-space limit every mapping counts, also those an OpenCL
 * runtime makes for a device buffer, and some runtimes abort when one fails;
 * so the memory budgets stay within what is left, and too small a limit is
 * reported, in one line, before anything starts. */
#ifndef LBK_RLIMIT_H
#define LBK_RLIMIT_H

#include "status.h"

#include <stdint.h>

/* Bytes of address space the process may map (UINT64_MAX: no limit). */
uint64_t lbk_rlimit_as_limit(void);
/* Bytes it maps now (0 where that cannot be read). */
uint64_t lbk_rlimit_as_used(void);
/* limit - used (UINT64_MAX without a limit; 0 when already over it). */
uint64_t lbk_rlimit_as_room(void);

/* LBK_ERR_NOMEM, logged as one line naming the limit, when less than
 * `need` bytes of address space are left for `what`; LBK_OK otherwise. */
lbk_status lbk_rlimit_as_require(uint64_t need, const char *what);

/* LBK_ERR_IO, logged as one line naming the limit,
 * when files may not grow to `need` bytes (MPI's shared-memory files). */
lbk_status lbk_rlimit_fsize_require(uint64_t need, const char *what);

#endif
