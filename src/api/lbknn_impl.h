/* The library's handles, shared by the files of src/api; private to it. */
#ifndef LBKNN_IMPL_H
#define LBKNN_IMPL_H

#include "lbknn.h"

#include "comm.h"
#include "device.h"
#include "index.h"
#include "job.h"
#include "log.h"
#include "status.h"
#include "targets.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdint.h>

#define LBKNN_MESSAGE_MAX 1024

struct lbknn_options {
    lbk_job job; /* the defaults, with the keys set */
    char error[LBKNN_MESSAGE_MAX];
};

struct lbknn_context {
    lbk_job options; /* device.* as the context was created with */
    lbk_comm comm;
    bool comm_ok;
    lbk_device *device;
    char device_desc[256];
    char error[LBKNN_MESSAGE_MAX];
    /* lbknn_context_set_log_callback: this context's callback (NULL: the
     * process's, lbknn_set_log_callback) and the most verbose level it gets. */
    lbknn_log_fn log_fn;
    void *log_user;
    lbknn_log_level log_level;
};

struct lbknn_index {
    lbknn_context *context;
    lbk_job options;         /* the index's, as set */
    lbk_index_params params; /* what the index reads of them (lbk_index_params_from_job) */
    lbk_tuning tuning;       /* its device's kernel parameters (lbk_device_tuning_from_job) */
    char tuning_text[160];   /* lbknn_index_tuning's */
    lbk_index *index;
    lbk_index_plan plan;
    lbk_dtype type; /* the points' type as built (lbknn_index_build_typed): queries are of
                     * it or float32; lbk_index_dtype says what the index keeps now */
    uint64_t rows;  /* over every rank */
    int dim;
    int32_t classes;     /* largest label + 1, 0 without labels */
    uint64_t first_row;  /* this rank's first global id */
    uint64_t local_rows; /* the rows this rank passed (a loaded index: the even split) */
    uint64_t *starts;    /* ranks + 1: rank r passed rows [starts[r], starts[r + 1]) */
    bool has_targets;    /* on every rank alike */
    double *targets;     /* of rows [targets_first, targets_first + targets_rows): those this
                          * rank passed, or (loaded) saved (NULL when none) */
    uint64_t targets_first, targets_rows;
    lbk_targets lookup; /* of the neighbours' targets by id, with targets */
    char error[LBKNN_MESSAGE_MAX];
};

/* One entry point's call: where its messages go and the thread's logger to
 * put back when it returns. On the caller's stack: nothing of it outlives
 * the call or is seen by another thread. */
typedef struct {
    char *message; /* the handle's: the call's first error (NULL: none kept) */
    lbknn_log_fn fn;
    void *user;
    lbknn_log_level level; /* the most verbose passed to fn */
    lbk_log saved;         /* the thread's logger before the call */
} lbk_api_call;

/* Every entry point: messages from here on go to `context`'s callback (or
 * the process's; never to stderr), with its rank, and the first error into
 * `message` (LBKNN_MESSAGE_MAX bytes, may be NULL); `context` may be NULL
 * (an options call) or not yet have its communicator. lbk_api_end turns the
 * status into the caller's, names a failure that logged nothing here and
 * puts the thread's logger back, so calls on two contexts in two threads,
 * or nested in a log callback, each keep their own. */
void lbk_api_begin(lbk_api_call *call, const lbknn_context *context, char *message);
lbknn_status lbk_api_end(lbk_api_call *call, lbk_status st);
/* The weights of a vote or an average (regress: uniform or distance; else
 * softmax too, with a positive temperature); distance weights need a
 * distance (not ip). lbknn_index.c. */
lbk_status lbk_api_check_weights(const lbknn_index *ix, lbknn_weights weights, double temperature,
                                 bool regress);
/* ---- The typed doors (lbknn_typed.c) ---- */

/* A public type as the library's; LBK_ERR_USAGE for a value that is none. */
lbk_status lbk_api_dtype(lbknn_dtype type, lbk_dtype *out);

/* The option reference.type against the type passed (ix->type): auto,
 * float32 or that type, else LBK_ERR_INPUT. Not collective. */
lbk_status lbk_api_check_type(const lbknn_index *ix);

/* This rank's `shard->rows` points of compact `type` into `shard` (its
 * rows, dim and first_row set): kept at their width, or widened to float32
 * where the options say so (reference.type float32, or a metric that
 * reads float32: lbk_compact_why, rank 0 saying why); float16 values must
 * be finite. */
lbk_status lbk_api_shard_compact(const lbknn_index *ix, lbk_dtype type, const void *points,
                                 lbk_dataset *shard);

/* A call's query rows as float32: `points` itself for FLOAT32, else the
 * values of the index's build type widened (exactly) into `owned`; another
 * type is LBK_ERR_USAGE. Not collective. Free with lbk_api_queries_free,
 * also on failure. */
typedef struct {
    const float *points;
    float *owned;
} lbk_api_queries;
lbk_status lbk_api_queries_widen(const lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                 const void *points, lbk_api_queries *out);
void lbk_api_queries_free(lbk_api_queries *q);

/* Collective, after the call's arguments are agreed: a compact index
 * widened (once; lbk_index_widen) where a radius search reads float32
 * points (lbk_index_compact_why). */
lbk_status lbk_api_widen_for_radius(const lbknn_index *ix);

/* The public code of a status (lbknn_status.c, from the status list). */
lbknn_status lbk_api_status(lbk_status status);

#endif
