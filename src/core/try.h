/* Early-return helpers, so that a function that owns nothing needs no
 * cleanup label, and one that does reads as a list of steps.
 *
 *   LBK_TRY(read_header(f, &h));             return the status if not OK
 *   LBK_FAIL_IF(n == 0, LBK_ERR_INPUT, "%s: empty", path);
 *                                            log once and return the status
 *   LBK_TRY_GOTO(st, alloc(&buf));           st = ...; goto cleanup if not OK
 *
 * Errors are still logged where they happen: LBK_TRY only passes a status
 * on, it never logs. */
#ifndef LBK_TRY_H
#define LBK_TRY_H

#include "log.h"
#include "status.h"

#define LBK_TRY(expr)                                                                            \
    do {                                                                                         \
        const lbk_status lbk_try_status_ = (expr);                                               \
        if (lbk_try_status_ != LBK_OK)                                                           \
            return lbk_try_status_;                                                              \
    } while (0)

#define LBK_FAIL_IF(cond, status, ...)                                                           \
    do {                                                                                         \
        if (cond) {                                                                              \
            lbk_error(__VA_ARGS__);                                                              \
            return (status);                                                                     \
        }                                                                                        \
    } while (0)

#define LBK_TRY_GOTO(st, expr)                                                                   \
    do {                                                                                         \
        if (((st) = (expr)) != LBK_OK)                                                           \
            goto cleanup;                                                                        \
    } while (0)

#endif
