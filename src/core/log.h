/* Logging: every message carries the program name and, in multi-rank runs,
 * the rank, so that one line on a cluster's stderr says who failed and why.
 * Errors are logged once, where they happen. A message is always one line:
 * control bytes and invalid UTF-8 in it (from a file name, say) are shown
 * escaped as \xNN. */
#ifndef LBK_LOG_H
#define LBK_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Where messages go instead of stderr (a library's caller, lbknn.h), or
 * NULL for stderr. `message` is one escaped line without the program and
 * level prefixes ("knn.k=0: must be ...", "rank 3: ..." on several ranks),
 * `level` 0 error, 1 warning, 2 information; --quiet does not apply. */
typedef void (*lbk_log_sink_fn)(void *user, int level, const char *message);

/* Where one thread's messages go and how they are labelled. Each thread has
 * its own (C11 _Thread_local), so no state of the log is shared between
 * threads: `lbknn` sets its one thread's at the start, the library sets the
 * calling thread's from the handle's context on entry to each call and puts
 * the caller's back on return (src/api, lbk_api_begin), so that two
 * contexts used in two threads never see each other's sink or rank. A new
 * thread starts at stderr, no rank, not quiet. */
typedef struct {
    lbk_log_sink_fn sink; /* NULL: stderr */
    void *user;           /* the sink's */
    int rank;             /* the prefix's rank; -1: none */
    bool quiet;           /* stderr only: warnings and information left out */
} lbk_log;

lbk_log lbk_log_get(void);
void lbk_log_set(const lbk_log *log);

/* Parts of this thread's logger. rank < 0 or size <= 1: no rank prefix. */
void lbk_log_set_rank(int rank, int size);
void lbk_log_set_quiet(bool quiet);
bool lbk_log_is_quiet(void);
void lbk_log_set_sink(lbk_log_sink_fn sink, void *user);

/* "lbknn: error: ..." / "lbknn[rank 3]: error: ..." */
void lbk_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lbk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational, to stderr, silenced by --quiet. */
void lbk_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The one way to print several lines (a compiler's log after the error line
 * that announced it): as they are, but with every control byte other than
 * newline and tab escaped. */
void lbk_log_text(const char *text);

/* text into out (size bytes, NUL-terminated) with control bytes and invalid
 * UTF-8 as \xNN (newline and tab kept when keep_newlines); cut with "..."
 * when it does not fit. Returns the length written. */
size_t lbk_log_escape(const char *text, char *out, size_t size, bool keep_newlines);

/* A path (or any text) for one line of ordinary output, such as the
 * summary: lbk_log_escape without newlines into buf, which is returned. */
const char *lbk_log_shown(const char *text, char *buf, size_t size);

#endif
