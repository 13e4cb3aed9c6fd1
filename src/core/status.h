/* Status codes shared by every fallible lbknn function. Only main() turns a
 * status into a process exit code (lbk_status_exit_code). One table gives
 * every status its name and exit code. */
#ifndef LBK_STATUS_H
#define LBK_STATUS_H

#include <stdbool.h>

/* X(constant, name, exit code): 2 for errors found in what the user gave
 * (reported before any computing), 1 for failures while running. */
#define LBK_STATUS_LIST(X)                                                                       \
    X(LBK_OK, "ok", 0)                                                                           \
    X(LBK_ERR_USAGE, "usage error", 2)          /* bad command line */                           \
    X(LBK_ERR_CONFIG, "configuration error", 2) /* bad job file or --set */                      \
    X(LBK_ERR_INPUT, "input error", 2)          /* bad or inconsistent data */                   \
    X(LBK_ERR_IO, "I/O error", 1)               /* read/write at run time */                     \
    X(LBK_ERR_NOMEM, "out of memory", 1)        /* host or device memory */                      \
    X(LBK_ERR_DEVICE, "device error", 1)        /* OpenCL, or no device */                       \
    X(LBK_ERR_MPI, "MPI error", 1)                                                               \
    X(LBK_ERR_REMOTE, "failure on another rank", 1) /* it said why */                            \
    X(LBK_ERR_INTERNAL, "internal error", 1)        /* an invariant failed */                    \
    X(LBK_ERR_REMOTE_INPUT, "bad job or input seen by another rank", 2)                          \
    X(LBK_STOPPED, "stopped with a checkpoint", 3) /* SIGUSR1 or run.max_hours */

#define LBK_STATUS_CONSTANT_(constant, name, code) constant,
typedef enum { LBK_STATUS_LIST(LBK_STATUS_CONSTANT_) } lbk_status;
#undef LBK_STATUS_CONSTANT_

int lbk_status_exit_code(lbk_status status);
/* What a rank that did not fail returns when `cause` stopped another: a
 * status with the cause's exit code, so every rank of a job (and mpirun)
 * exits with the same code. */
lbk_status lbk_status_remote(lbk_status cause);
bool lbk_status_is_remote(lbk_status status);
const char *lbk_status_name(lbk_status status);

#endif
