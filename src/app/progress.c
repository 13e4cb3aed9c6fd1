#include "progress.h"

#include "timer.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

void lbk_progress_start(lbk_progress *p, bool enabled, uint64_t total_queries)
{
    p->enabled = enabled;
    p->drawn = false;
    p->terminal = isatty(STDERR_FILENO);
    p->start = p->last = lbk_timer_now();
    p->total = total_queries;
}

void lbk_progress_update(lbk_progress *p, uint64_t done, uint64_t batch, uint64_t batches)
{
    if (!p->enabled)
        return;
    const double now = lbk_timer_now();
    /* A log file gets a line every few seconds, a terminal a few redraws a second. */
    const double interval = p->terminal ? 0.25 : 5.0;
    if (now - p->last < interval && done < p->total)
        return;
    p->last = now;
    const double elapsed = now - p->start;
    const double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
    const double eta = rate > 0 ? (double)(p->total - done) / rate : 0.0;
    fprintf(stderr,
            "%sbatch %" PRIu64 "/%" PRIu64 "  %" PRIu64 "/%" PRIu64
            " queries  %.0f q/s  ETA %.0f s%s",
            p->terminal ? "\r" : "", batch, batches, done, p->total, rate, eta,
            p->terminal ? "   " : "\n");
    fflush(stderr);
    p->drawn = true;
}

void lbk_progress_finish(lbk_progress *p)
{
    if (p->enabled && p->drawn && p->terminal)
        fputc('\n', stderr);
    p->drawn = false;
}
