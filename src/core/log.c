#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_rank = -1;
static bool log_quiet = false;

void lbk_log_set_rank(int rank, int size) { log_rank = size > 1 ? rank : -1; }
void lbk_log_set_quiet(bool quiet) { log_quiet = quiet; }
bool lbk_log_is_quiet(void) { return log_quiet; }

static void log_line(const char *level, const char *fmt, va_list ap)
{
    /* One fprintf per line: ranks share a terminal and whole lines interleave
     * far more readably than fragments. */
    char body[2048];
    vsnprintf(body, sizeof body, fmt, ap);
    if (log_rank >= 0)
        fprintf(stderr, "lbknn[rank %d]: %s%s\n", log_rank, level, body);
    else
        fprintf(stderr, "lbknn: %s%s\n", level, body);
}

void lbk_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("error: ", fmt, ap);
    va_end(ap);
}

void lbk_warn(const char *fmt, ...)
{
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line("warning: ", fmt, ap);
    va_end(ap);
}

void lbk_info(const char *fmt, ...)
{
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line("", fmt, ap);
    va_end(ap);
}
