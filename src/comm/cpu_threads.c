#include "cpu_threads.h"

#include "cpu_share.h"
#include "env_lock.h"
#include "log.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

lbk_cpu_threads_source lbk_cpu_threads_apply(const lbk_comm *comm)
{
    lbk_env_lock_acquire();
    const bool user_set = getenv("POCL_MAX_PTHREAD_COUNT") != NULL;
    const long share = user_set ? 0 : lbk_cpu_share(comm);
    char value[32];
    snprintf(value, sizeof value, "%ld", share);
    const bool set = share > 0 && setenv("POCL_MAX_PTHREAD_COUNT", value, 0) == 0;
    lbk_env_lock_release();
    if (user_set)
        return LBK_CPU_THREADS_ENVIRONMENT;
    if (share <= 0)
        return LBK_CPU_THREADS_DEVICE_DEFAULT; /* PoCL's own default is already right */
    if (!set) {
        /* Outside the lock: the warning may reach a library caller's callback. */
        lbk_warn("cannot set POCL_MAX_PTHREAD_COUNT=%s; CPU threads may oversubscribe", value);
        return LBK_CPU_THREADS_DEVICE_DEFAULT;
    }
    return LBK_CPU_THREADS_NODE_SHARE;
}

const char *lbk_cpu_threads_source_name(lbk_cpu_threads_source source)
{
    switch (source) {
    case LBK_CPU_THREADS_DEVICE_DEFAULT: return "device default";
    case LBK_CPU_THREADS_ENVIRONMENT: return "environment";
    case LBK_CPU_THREADS_NODE_SHARE: return "node share";
    case LBK_CPU_THREADS_JOB: return "device.threads";
    }
    return "?";
}
