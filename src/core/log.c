#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* This thread's: see lbk_log in log.h for why no thread shares it. */
static _Thread_local lbk_log current = {.sink = NULL, .user = NULL, .rank = -1, .quiet = false};

lbk_log lbk_log_get(void) { return current; }
void lbk_log_set(const lbk_log *log) { current = *log; }

void lbk_log_set_sink(lbk_log_sink_fn sink, void *user)
{
    current.sink = sink;
    current.user = user;
}

void lbk_log_set_rank(int rank, int size) { current.rank = size > 1 ? rank : -1; }
void lbk_log_set_quiet(bool quiet) { current.quiet = quiet; }
bool lbk_log_is_quiet(void) { return current.quiet; }

/* Length of the well-formed UTF-8 sequence at p (2 to 4 bytes, no
 * overlong forms, surrogates or C1 controls), or 0. */
static size_t utf8_length(const unsigned char *p)
{
    size_t n;
    unsigned cp;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2;
        cp = p[0] & 0x1fu;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        cp = p[0] & 0x0fu;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        cp = p[0] & 0x07u;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
        return 0;
    return n;
}

const char *lbk_log_shown(const char *text, char *buf, size_t size)
{
    lbk_log_escape(text, buf, size, false);
    return buf;
}

size_t lbk_log_escape(const char *text, char *out, size_t size, bool keep_newlines)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t used = 0;
    if (size == 0)
        return 0;
    while (*p && used + 5 < size) {
        const size_t n = *p < 0x80 ? 1 : utf8_length(p); /* 0: not UTF-8 */
        const bool plain = n > 1 || (n == 1 && *p >= 0x20 && *p != 0x7f) ||
                           (keep_newlines && (*p == '\n' || *p == '\t'));
        if (plain) {
            if (used + n + 5 >= size)
                break;
            memcpy(out + used, p, n);
            used += n;
            p += n;
        } else {
            used += (size_t)snprintf(out + used, size - used, "\\x%02x", *p++);
        }
    }
    if (*p && used + 4 < size)
        used += (size_t)snprintf(out + used, size - used, "...");
    out[used] = '\0';
    return used;
}

static void log_line(int level_code, const char *level, const char *fmt, va_list ap)
{
    /* A message is one line whatever it quotes: control bytes (a newline or
     * an escape sequence in a file name) and invalid UTF-8 are shown as \xNN,
     * so no path can forge a line or drive the terminal. One fprintf per
     * line: ranks share a terminal and whole lines interleave far more
     * readably than fragments. */
    char body[2048], shown[4 * sizeof body];
    vsnprintf(body, sizeof body, fmt, ap);
    lbk_log_escape(body, shown, sizeof shown, false);
    const lbk_log log = current;
    if (log.sink && log.rank >= 0) {
        char ranked[sizeof shown + 32];
        snprintf(ranked, sizeof ranked, "rank %d: %s", log.rank, shown);
        log.sink(log.user, level_code, ranked);
    } else if (log.sink) {
        log.sink(log.user, level_code, shown);
    } else if (log.rank >= 0)
        fprintf(stderr, "lbknn[rank %d]: %s%s\n", log.rank, level, shown);
    else
        fprintf(stderr, "lbknn: %s%s\n", level, shown);
}

void lbk_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(0, "error: ", fmt, ap);
    va_end(ap);
}

void lbk_warn(const char *fmt, ...)
{
    if (current.quiet && !current.sink)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line(1, "warning: ", fmt, ap);
    va_end(ap);
}

void lbk_info(const char *fmt, ...)
{
    if (current.quiet && !current.sink)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line(2, "", fmt, ap);
    va_end(ap);
}

void lbk_log_text(const char *text)
{
    /* On the stack, not static: two threads may each log a compiler's log. */
    char shown[16384];
    lbk_log_escape(text, shown, sizeof shown, true);
    const lbk_log log = current;
    if (log.sink) {
        log.sink(log.user, 2, shown);
        return;
    }
    const size_t n = strlen(shown);
    fprintf(stderr, "%s%s", shown, n > 0 && shown[n - 1] == '\n' ? "" : "\n");
}
