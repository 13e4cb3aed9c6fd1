/* Status codes shared by every fallible lbknn function. Only main() turns a
 * status into a process exit code (lbk_status_exit_code). */
#ifndef LBK_STATUS_H
#define LBK_STATUS_H

typedef enum {
    LBK_OK = 0,
    LBK_ERR_USAGE,    /* bad command line                      -> exit 2 */
    LBK_ERR_CONFIG,   /* bad job file or --set override        -> exit 2 */
    LBK_ERR_INPUT,    /* bad or inconsistent data file         -> exit 2 */
    LBK_ERR_IO,       /* cannot read/write a file at run time  -> exit 1 */
    LBK_ERR_NOMEM,    /* host or device allocation failed      -> exit 1 */
    LBK_ERR_DEVICE,   /* OpenCL failure or no usable device    -> exit 1 */
    LBK_ERR_MPI,      /* MPI failure                           -> exit 1 */
    LBK_ERR_REMOTE,   /* another rank failed and said so       -> exit 1 */
    LBK_ERR_INTERNAL  /* a bug: an invariant did not hold      -> exit 1 */
} lbk_status;

/* 0 for LBK_OK, 2 for usage/config/input errors, 1 for runtime failures. */
int lbk_status_exit_code(lbk_status status);
const char *lbk_status_name(lbk_status status);

#endif
