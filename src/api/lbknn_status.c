/* The library's codes and their messages, read from the one status list
 * (src/core/status.h) instead of written here: every status becomes the
 * public code its row names, and every code of lbknn.h has the message of
 * its PUBLIC row. What the list and lbknn.h disagree on does not compile:
 * a status without a public code, a public code lbknn.h lacks, a code of
 * lbknn.h without a row or with two (tests/status checks that it fails). */
#include "lbknn_impl.h"

lbknn_status lbk_api_status(lbk_status status)
{
    switch (status) {
        /* In parentheses, so that a row whose public code is left empty
         * does not compile either. */
#define STATUS_CASE_(constant, name, exit_code, public_code)                                     \
    case constant: return (public_code);
        LBK_STATUS_LIST(LBK_STATUS_SKIP_PUBLIC, STATUS_CASE_)
#undef STATUS_CASE_
    }
    return LBKNN_ERR_INTERNAL; /* not a status: a bug */
}

/* Without a default, a code of lbknn.h that has no case is a -Wswitch
 * warning: an error here, so that it stops the build. */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
const char *lbknn_status_string(lbknn_status status)
{
    switch (status) {
#define PUBLIC_CASE_(code, message)                                                              \
    case code: return message;
        LBK_STATUS_LIST(PUBLIC_CASE_, LBK_STATUS_SKIP_STATUS)
#undef PUBLIC_CASE_
    }
    return "unknown status";
}
#pragma GCC diagnostic pop
