/* Command-line helpers the benchmark programs share. */
#ifndef LBK_BENCH_ARGS_H
#define LBK_BENCH_ARGS_H

#include <stdlib.h>

/* "1,8,64" into out[0..cap): the count read; stops at the first item that
 * is not a number. */
static inline int lbk_bench_parse_ints(const char *s, int *out, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s)
            break;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

#endif
