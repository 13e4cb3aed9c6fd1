/* Status codes shared by every fallible lbknn function. Only main() turns a
 * status into a process exit code (lbk_status_exit_code). One list gives
 * every status its name, its exit code and the library's code for it, and
 * every one of the library's codes its message. */
#ifndef LBK_STATUS_H
#define LBK_STATUS_H

#include <stdbool.h>

/* The one list of statuses, a table (clang-format would undo its columns),
 * read wherever a status is named: the enum below, the names and exit codes
 * (status.c), the library's codes and lbknn_status_string
 * (src/api/lbknn_status.c) and Python's constants (lbknn/_status.py, written
 * at build time by src/python/status_constants.c).
 *
 * PUBLIC(code, message): a code of the library and its message. lbknn.h
 * keeps the codes' enum, values and all, written out (it is installed alone,
 * and read); each of its codes has exactly one PUBLIC row, or lbknn_status.c
 * does not compile.
 *
 * STATUS(constant, name, exit code, public code): a status, with the
 * library's code for it. Exit codes: 2 for errors found in what the user gave
 * (reported before any computing), 1 for failures while running, 3 for a stop
 * with a checkpoint. A status without a public code (one argument short, or
 * an empty one) does not compile; several statuses may share a code.
 *
 * USAGE: the command line; CONFIG: the job file or --set (in the library: an
 * option); INPUT: bad or inconsistent data; IO: reading or writing at run
 * time; NOMEM: host or device memory; DEVICE: OpenCL, or no device; REMOTE,
 * REMOTE_INPUT: a failure on another rank, which said why (the library does
 * not tell them apart); INTERNAL: an invariant failed; STOPPED: SIGUSR1 or
 * run.max_hours (only `lbknn run` stops, so in the library it would be a bug). */
/* clang-format off */
#define LBK_STATUS_LIST(PUBLIC, STATUS)                                                          \
    PUBLIC(LBKNN_OK,           "ok")                                                             \
    PUBLIC(LBKNN_ERR_USAGE,    "invalid argument")                                               \
    PUBLIC(LBKNN_ERR_CONFIG,   "bad option")                                                     \
    PUBLIC(LBKNN_ERR_INPUT,    "bad input data")                                                 \
    PUBLIC(LBKNN_ERR_IO,       "I/O error")                                                      \
    PUBLIC(LBKNN_ERR_NOMEM,    "out of memory")                                                  \
    PUBLIC(LBKNN_ERR_DEVICE,   "device error")                                                   \
    PUBLIC(LBKNN_ERR_MPI,      "MPI error")                                                      \
    PUBLIC(LBKNN_ERR_REMOTE,   "failure on another rank")                                        \
    PUBLIC(LBKNN_ERR_INTERNAL, "internal error")                                                 \
    STATUS(LBK_OK,               "ok",                                    0, LBKNN_OK)           \
    STATUS(LBK_ERR_USAGE,        "usage error",                           2, LBKNN_ERR_USAGE)    \
    STATUS(LBK_ERR_CONFIG,       "configuration error",                   2, LBKNN_ERR_CONFIG)   \
    STATUS(LBK_ERR_INPUT,        "input error",                           2, LBKNN_ERR_INPUT)    \
    STATUS(LBK_ERR_IO,           "I/O error",                             1, LBKNN_ERR_IO)       \
    STATUS(LBK_ERR_NOMEM,        "out of memory",                         1, LBKNN_ERR_NOMEM)    \
    STATUS(LBK_ERR_DEVICE,       "device error",                          1, LBKNN_ERR_DEVICE)   \
    STATUS(LBK_ERR_MPI,          "MPI error",                             1, LBKNN_ERR_MPI)      \
    STATUS(LBK_ERR_REMOTE,       "failure on another rank",               1, LBKNN_ERR_REMOTE)   \
    STATUS(LBK_ERR_INTERNAL,     "internal error",                        1, LBKNN_ERR_INTERNAL) \
    STATUS(LBK_ERR_REMOTE_INPUT, "bad job or input seen by another rank", 2, LBKNN_ERR_REMOTE)   \
    STATUS(LBK_STOPPED,          "stopped with a checkpoint",             3, LBKNN_ERR_INTERNAL)
/* clang-format on */

/* For the rows a reader of the list does not need. */
#define LBK_STATUS_SKIP_PUBLIC(code, message)
#define LBK_STATUS_SKIP_STATUS(constant, name, exit_code, public_code)

#define LBK_STATUS_CONSTANT_(constant, name, exit_code, public_code) constant,
typedef enum { LBK_STATUS_LIST(LBK_STATUS_SKIP_PUBLIC, LBK_STATUS_CONSTANT_) } lbk_status;
#undef LBK_STATUS_CONSTANT_

int lbk_status_exit_code(lbk_status status);
/* What a rank that did not fail returns when `cause` stopped another: a
 * status with the cause's exit code, so every rank of a job (and mpirun)
 * exits with the same code. */
lbk_status lbk_status_remote(lbk_status cause);
bool lbk_status_is_remote(lbk_status status);
const char *lbk_status_name(lbk_status status);

#endif
