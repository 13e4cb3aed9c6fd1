/* Prints what the built code says of every status and code, for
 * status_agree.py to hold against the text of the list and of lbknn.h:
 *   status CONSTANT VALUE EXIT PUBLIC NAME    (each row of the list, in order)
 *   string VALUE MESSAGE                      (lbknn_status_string, -2..15)
 * The rows are walked with the list itself; what each function returns is
 * what is checked. */
#include "lbknn_impl.h"

#include <stdio.h>

int main(void)
{
#define STATUS_LINE_(constant, name, exit_code, public_code)                                     \
    printf("status %s %d %d %d %s\n", #constant, (int)(constant),                                \
           lbk_status_exit_code(constant), (int)lbk_api_status(constant),                        \
           lbk_status_name(constant));
    LBK_STATUS_LIST(LBK_STATUS_SKIP_PUBLIC, STATUS_LINE_)
#undef STATUS_LINE_
    /* Past both ends too: a value that is no code has no message of its own. */
    for (int v = -2; v <= 15; v++)
        printf("string %d %s\n", v, lbknn_status_string((lbknn_status)v));
    return ferror(stdout) ? 1 : 0;
}
