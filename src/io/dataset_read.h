/* The readers of a job's data sources, for every supported file format
 * (whole file or a row range [lo, hi) for shards), and the seeded synthetic
 * generator: apart from dataset.h, which the index uses without knowing
 * jobs. */
#ifndef LBK_DATASET_READ_H
#define LBK_DATASET_READ_H

#include "dataset.h"
#include "job.h"

/* What a source holds, without reading the points: the row count and the
 * dimension, after checking the header/first record. For CSV this scans the
 * file once. Errors: "FILE:ROW[:COL]: what is wrong", LBK_ERR_INPUT. */
typedef struct {
    uint64_t rows;
    int dim;
    bool has_labels;
    bool has_targets;         /* spec->targets or spec->target_column (task regress) */
    lbk_format format;        /* resolved (never AUTO) */
    lbk_format labels_format; /* resolved; AUTO when labels are a CSV column or absent */
    lbk_dtype file_type;      /* the file's values: UINT8 (bvecs, u8bin, IDX ubyte, npy |u1),
                               * INT8 (i8bin, IDX sbyte, npy |i1), FLOAT16 (npy <f2),
                               * FLOAT32 for every other */
    lbk_dtype type;           /* what the read keeps: spec->type resolved (never AUTO) */
} lbk_dataset_info;

lbk_status lbk_dataset_probe(const lbk_job_input_spec *spec, lbk_dataset_info *info);

/* spec->type against the file's: AUTO keeps the file's type, FLOAT32
 * widens any, and a compact type needs a file of that type (else one line
 * naming the file, both types and the fix). */
lbk_status lbk_dataset_resolve_type(const char *path, lbk_dtype asked, lbk_dtype file_type,
                                    lbk_dtype *out);

/* Read rows [lo, hi) of points (at the width the probe resolved: points,
 * or raw for a compact type) and (if present) labels. Seekable formats
 * (fvecs/ivecs/bvecs, plain IDX, npy, the big-ann files) read only those
 * bytes. Every value is
 * checked: non-finite values, truncated records, ragged rows, non-numeric
 * fields and label/point count mismatches are LBK_ERR_INPUT with the file,
 * the 1-based row (and column where it applies). Rows are the record number
 * in binary files and the physical line number in text files. Labels are
 * non-negative int32. lo == hi is an empty shard: headers are still
 * checked. A labels file together with a CSV label_column is an error. */
lbk_status lbk_dataset_read(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi,
                            lbk_dataset *out);

/* Rows [lo, hi) of the source's regression targets (spec->targets, or the
 * CSV column spec->target_column) as float64, into targets (hi - lo
 * values): every value finite, else "FILE:ROW: what is wrong". The probe
 * has checked that there is one target per point. */
lbk_status lbk_dataset_read_targets(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi,
                                    double *targets);

/* One number per row from `path` (query.radii: .npy, one number a line of
 * text, or .fvecs of dimension 1, as targets are read), exactly `rows`
 * of them: another count is one line naming `key`, the file and both
 * counts; a value that is not a finite number names its row. */
lbk_status lbk_dataset_read_values(const char *path, const char *key, uint64_t rows,
                                   double *values);

/* The synthetic data set: rows [lo, hi) of the reference set (is_query =
 * false) or of the query set. Every row is a pure function of (seed, row), so
 * any shard produces exactly the rows a single process would. Labels always
 * present. */
lbk_status lbk_synthetic_rows(const lbk_job_synthetic_spec *spec, bool is_query, uint64_t lo,
                              uint64_t hi, lbk_dataset *out);

#endif
