/* The library's handles, shared by lbknn.c and lbknn_index.c; private to
 * src/api. */
#ifndef LBKNN_IMPL_H
#define LBKNN_IMPL_H

#include "lbknn.h"

#include "comm.h"
#include "device.h"
#include "index.h"
#include "job.h"
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
};

struct lbknn_index {
    lbknn_context *context;
    lbk_job options;         /* the index's, as set */
    lbk_index_params params; /* what the index reads of them (lbk_index_params_from_job) */
    lbk_tuning tuning;       /* its device's kernel parameters (lbk_device_tuning_from_job) */
    char tuning_text[160];   /* lbknn_index_tuning's */
    lbk_index *index;
    lbk_index_plan plan;
    uint64_t rows; /* over every rank */
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

/* Every entry point: messages from here on go to the callback (never to
 * stderr) and the first error into `message` (LBKNN_MESSAGE_MAX bytes, may
 * be NULL); lbk_api_end turns the status into the caller's and names a
 * failure that logged nothing here. */
void lbk_api_begin(char *message);
lbknn_status lbk_api_end(lbk_status st);

#endif
