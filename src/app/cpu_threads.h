/* The worker threads of a rank's CPU OpenCL device. PoCL starts
 * POCL_MAX_PTHREAD_COUNT of them when that is set, else one per core of the
 * node; lbknn sets it to the rank's share of the node unless the user did
 * (main.c: the environment is read there only).
 * The summary and the report say which, per rank. */
#ifndef LBK_CPU_THREADS_H
#define LBK_CPU_THREADS_H

typedef enum {
    LBK_CPU_THREADS_DEVICE_DEFAULT, /* nothing set: the device's own choice */
    LBK_CPU_THREADS_ENVIRONMENT,    /* the user's POCL_MAX_PTHREAD_COUNT */
    LBK_CPU_THREADS_NODE_SHARE      /* set here: lbk_cpu_share */
} lbk_cpu_threads_source;

/* "device default", "environment", "node share" */
const char *lbk_cpu_threads_source_name(lbk_cpu_threads_source source);

#endif
