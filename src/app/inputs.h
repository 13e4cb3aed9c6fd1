/* A job's inputs before any computing: their shape (probed without reading
 * every row), the checks that need no computing (dimensions, K, labels,
 * output paths), reading a range of rows, and the `check` command built
 * from those. Synthetic data (no reference.path) answers like a file. */
#ifndef LBK_INPUTS_H
#define LBK_INPUTS_H

#include "dataset_read.h"
#include "job.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

/* What rank 0 learns about the inputs; broadcast as bytes. */
typedef struct {
    uint64_t reference_rows, query_rows;
    int dim;
    bool reference_labels, query_labels;
    bool reference_targets, query_targets; /* task regress */
    lbk_dtype reference_type;              /* what reading keeps (reference.type resolved) */
} lbk_inputs_shape;

/* Rows, dimension and labels of both inputs; the dimensions must agree. */
lbk_status lbk_inputs_probe(const lbk_job *job, lbk_inputs_shape *shape);

/* The same for a saved index, whose reference side (rows, dimension) its
 * manifest gives: only the queries are probed. */
lbk_status lbk_inputs_probe_queries(const lbk_job *job, uint64_t reference_rows, int dim,
                                    lbk_inputs_shape *shape);

/* A non-empty reference set, K within it, ids that fit the neighbours file,
 * reference labels for predictions, and outputs that are neither
 * directories nor input files. */
lbk_status lbk_inputs_check(const lbk_job *job, const lbk_inputs_shape *shape);

/* Why the job's reference points of type `type` cannot stay compact (a
 * sentence), or NULL where they may (the index may still widen them for its
 * plan). */
const char *lbk_inputs_compact_why(const lbk_job *job, lbk_dtype type);

/* Rows [lo, hi) of the reference points or the queries, every value
 * checked: queries as float32, reference points at reference.type where
 * lbk_inputs_compact_why allows, else widened. */
lbk_status lbk_inputs_read_rows(const lbk_job *job, bool is_query, uint64_t lo, uint64_t hi,
                                lbk_dataset *out);

/* Rows [lo, hi) of the reference or query targets (task regress), into
 * hi - lo doubles. */
lbk_status lbk_inputs_read_targets(const lbk_job *job, bool is_query, uint64_t lo, uint64_t hi,
                                   double *targets);

/* The input's path, or "built-in synthetic blobs", for messages and reports. */
const char *lbk_inputs_name(const lbk_job *job, bool is_query);

/* The `check` command, single process: probe and fully read both inputs,
 * check them, and print what was found. */
lbk_status lbk_inputs_check_command(const lbk_job *job);

#endif
