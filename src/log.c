#include "log.h"
#include "status.h"

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

int lbk_status_exit_code(lbk_status status)
{
    switch (status) {
    case LBK_OK: return 0;
    case LBK_ERR_USAGE:
    case LBK_ERR_CONFIG:
    case LBK_ERR_INPUT: return 2;
    default: return 1;
    }
}

const char *lbk_status_name(lbk_status status)
{
    switch (status) {
    case LBK_OK: return "ok";
    case LBK_ERR_USAGE: return "usage error";
    case LBK_ERR_CONFIG: return "configuration error";
    case LBK_ERR_INPUT: return "input error";
    case LBK_ERR_IO: return "I/O error";
    case LBK_ERR_NOMEM: return "out of memory";
    case LBK_ERR_DEVICE: return "device error";
    case LBK_ERR_MPI: return "MPI error";
    case LBK_ERR_REMOTE: return "failure on another rank";
    case LBK_ERR_INTERNAL: return "internal error";
    }
    return "unknown";
}
