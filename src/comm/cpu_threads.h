/* The worker threads of a rank's CPU OpenCL device. PoCL starts
 * POCL_MAX_PTHREAD_COUNT of them when that is set, else one per core of the
 * node; lbknn sets it to the rank's share of the node unless the user did
 * (lbk_cpu_threads_apply, called by `lbknn run`'s main and by the library's
 * context). The summary and the report say which, per rank. */
#ifndef LBK_CPU_THREADS_H
#define LBK_CPU_THREADS_H

#include "comm.h"

typedef enum {
    LBK_CPU_THREADS_DEVICE_DEFAULT, /* nothing set: the device's own choice */
    LBK_CPU_THREADS_ENVIRONMENT,    /* the user's POCL_MAX_PTHREAD_COUNT */
    LBK_CPU_THREADS_NODE_SHARE,     /* set here: lbk_cpu_share */
    LBK_CPU_THREADS_JOB             /* device.threads: a sub-device of that many */
} lbk_cpu_threads_source;

/* Before any device is opened (PoCL reads the variable when its platform
 * starts): POCL_MAX_PTHREAD_COUNT set to this rank's share of its node
 * (lbk_cpu_share) unless it is set already (the user may know better: SMT,
 * or a deliberate overlap) or the share is every core. Returns where the
 * setting comes from. */
lbk_cpu_threads_source lbk_cpu_threads_apply(const lbk_comm *comm);

/* "device default", "environment", "node share", "device.threads" */
const char *lbk_cpu_threads_source_name(lbk_cpu_threads_source source);

#endif
