/* A replacement for the brute engine's bubble selection, for the baselines
 * the benchmarks compare it with (bench/cuknn_baseline.c). The engine plans
 * the memory, computes each reference chunk's exact distance matrix and hands
 * it to the selector, which leaves each query's K best - merged with the
 * earlier chunks' best - in best_k/best_i. OpenCL-level, like device_cl.h. */
#ifndef LBK_BRUTE_SELECT_H
#define LBK_BRUTE_SELECT_H

#include "brute.h"
#include "device_cl.h"

#include <stdint.h>

/* One chunk's distance matrix: nb rows of nr keys, row stride ldd; column c
 * is reference base + c. */
typedef struct {
    cl_mem dist;
    cl_ulong ldd;
    cl_uint nb, nr, base;
    cl_uint use_prev;      /* best_k/best_i already hold earlier chunks' K best */
    cl_mem best_k, best_i; /* nb rows of K */
} lbk_brute_chunk;

struct lbk_brute_selector {
    void *ctx;
    /* Device bytes per query of the selector's scratch for a chunk of `rows`
     * references, for the memory plan; no single buffer may need more than
     * half of it. */
    uint64_t (*scratch_bytes)(void *ctx, uint64_t rows);
    /* Once the plan is made: build kernels, allocate scratch for batches of
     * up to `batch` queries and chunks of up to `chunk` references. */
    lbk_status (*prepare)(void *ctx, lbk_brute *engine, uint64_t batch, uint64_t chunk);
    lbk_status (*select)(void *ctx, lbk_brute *engine, const lbk_brute_chunk *chunk);
    /* The engine owns ctx from lbk_brute_create on, and calls this when it is
     * destroyed or its creation fails. */
    void (*destroy)(void *ctx);
};

/* What a kernel's time counts as in lbk_brute_timing. */
typedef enum {
    LBK_BRUTE_EVENT_DISTANCE,
    LBK_BRUTE_EVENT_SELECT,
    LBK_BRUTE_EVENT_FINAL
} lbk_brute_event;

/* Enqueue a 2-D kernel on the engine's queue, profiled as `kind`. */
lbk_status lbk_brute_launch(lbk_brute *engine, cl_kernel kernel, lbk_brute_event kind, size_t g0,
                            size_t g1, size_t l0, size_t l1);

lbk_device *lbk_brute_device(const lbk_brute *engine);

#endif
