/* Wall-clock seconds from a monotonic clock, for phase timings. */
#ifndef LBK_TIMER_H
#define LBK_TIMER_H

#include <time.h>

static inline double lbk_timer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
