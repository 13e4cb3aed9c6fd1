/* Logging: every message carries the program name and, in multi-rank runs,
 * the rank, so that one line on a cluster's stderr says who failed and why.
 * Errors are logged once, where they happen. */
#ifndef LBK_LOG_H
#define LBK_LOG_H

#include <stdbool.h>

/* rank < 0 or size <= 1: no rank prefix. */
void lbk_log_set_rank(int rank, int size);
void lbk_log_set_quiet(bool quiet);
bool lbk_log_is_quiet(void);

/* "lbknn: error: ..." / "lbknn[rank 3]: error: ..." */
void lbk_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lbk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational, to stderr, silenced by --quiet. */
void lbk_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
