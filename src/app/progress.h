/* A one-line progress display on stderr for long runs: batches done,
 * queries/s and ETA, redrawn at most a few times a second. */
#ifndef LBK_PROGRESS_H
#define LBK_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool enabled;
    bool drawn;
    bool terminal; /* redraw in place with \r; otherwise one line per update */
    double start, last;
    uint64_t total;
} lbk_progress;

/* enabled: the caller's decision (tty or --progress, and not --quiet). */
void lbk_progress_start(lbk_progress *p, bool enabled, uint64_t total_queries);
void lbk_progress_update(lbk_progress *p, uint64_t done, uint64_t batch, uint64_t batches);
void lbk_progress_finish(lbk_progress *p);

#endif
