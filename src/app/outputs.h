/* Result files: predictions CSV (query,label; task regress: query,value), class probabilities CSV
 * (query,p0,p1,...), neighbours and distances (K per query: the ground-truth
 * layouts of ANN benchmarks, by extension: .ivecs/.fvecs, .ibin/.fbin, .npy,
 * .hdf5/.h5 (datasets `neighbors`, int32 or int64 as the ids need, and
 * `distances`, float32); dataset.h, lbk_dataset_array_layout).
 * Every file is written under a partial name of this run's own and renamed
 * only when the whole run succeeded, so a failed run leaves no output file
 * and changes none that was there (outfile.h; an output that is not a
 * regular file, such as /dev/null or a FIFO, is written in place). Writes go
 * to explicit offsets, so with reduce_scatter every rank writes its own slice
 * of the same file (which must then be on a file system all ranks share). */
#ifndef LBK_OUTPUTS_H
#define LBK_OUTPUTS_H

#include "dataset.h"
#include "job.h"
#include "knn.h"
#include "outfile.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    lbk_outfile file;  /* file.fd -1 when closed or not requested */
    size_t header_len; /* bytes before the first row (CSV line, array header) */
} lbk_outputs_file;

/* One file per entry of LBK_JOB_OUTPUT_LIST (job.h), under the same name. */
typedef struct {
#define LBK_OUTPUTS_FILE_(name) lbk_outputs_file name;
    LBK_JOB_OUTPUT_LIST(LBK_OUTPUTS_FILE_)
#undef LBK_OUTPUTS_FILE_
    int k;
    lbk_metric metric;
    int classes; /* probabilities: columns p0 .. p(classes - 1) */
    bool values; /* task regress: the predictions are values, not labels */
    lbk_dataset_array_layout neighbors_layout, distances_layout;
    size_t id_bytes;       /* neighbours: 4 (int32) or, in HDF5 past INT32_MAX ids, 8 */
    uint64_t text_offset;  /* predictions: bytes written so far (all ranks) */
    uint64_t proba_offset; /* probabilities: the same */
} lbk_outputs;

/* What the files' headers and row offsets depend on beyond the job. */
typedef struct {
    uint64_t queries;    /* rows of the neighbours and distances arrays */
    int classes;         /* reference labels 0 .. classes - 1 */
    uint64_t references; /* reference rows: the ids' range */
    /* lbk_outputs_rows_span of an HDF5 array (LBK_JOB_OUTPUT_LIST order):
     * its dataset's offset in its file */
    uint64_t hdf5_offset[LBK_JOB_OUTPUT_COUNT];
} lbk_outputs_shape;

/* Creator (rank 0): create the partial files, truncated, write the headers
 * (CSV lines, array headers); `shared` when other ranks will write slices of
 * them. Others (slices of each batch): `out` as the creator filled it
 * (broadcast), open what it made. Every output but the report, which
 * lbk_outputs_write_report makes whole at the end. */
lbk_status lbk_outputs_open(lbk_outputs *out, const lbk_job *job, const lbk_outputs_shape *shape,
                            bool create, bool shared);
/* Creator with checkpoints (checkpoint.h, plans where it writes every
 * file): kept partial files, each cut to keep[i] bytes (LBK_JOB_OUTPUT_LIST
 * order; 0 = fresh), headers (re)written; an HDF5 array kept as it is
 * (LBK_OUTFILE_KEEP_LENGTH) is not laid out again: its rows start at
 * hdf5_offset[i]. */
lbk_status lbk_outputs_open_kept(lbk_outputs *out, const lbk_job *job,
                                 const lbk_outputs_shape *shape,
                                 const uint64_t keep[LBK_JOB_OUTPUT_COUNT],
                                 const uint64_t hdf5_offset[LBK_JOB_OUTPUT_COUNT]);
/* Array i's bytes before its first row (an HDF5 array's dataset offset);
 * 0 for the other files. */
uint64_t lbk_outputs_header_len(const lbk_outputs *out, int i);
/* out's files in LBK_JOB_OUTPUT_LIST order (fd -1: not written), and the
 * key that names file i ("output.neighbors"). */
void lbk_outputs_files(lbk_outputs *out, lbk_outfile *files[LBK_JOB_OUTPUT_COUNT]);
const char *lbk_outputs_key(int i);
bool lbk_outputs_want_predictions(const lbk_outputs *out);
bool lbk_outputs_want_probabilities(const lbk_outputs *out);

/* Where file i (LBK_JOB_OUTPUT_LIST order) holds the rows of queries
 * [first, first + count): *offset and *len in bytes, for the neighbours and
 * distances arrays of fixed-size rows; false for every other file. From
 * the job and shape alone, before any file is open (an HDF5 array's from
 * shape->hdf5_offset, its dataset's, which its file's creation found). */
bool lbk_outputs_rows_span(const lbk_job *job, const lbk_outputs_shape *shape, int i,
                           uint64_t first, uint64_t count, uint64_t *offset, uint64_t *len);

/* Neighbours and distances of queries [first, first + count). */
lbk_status lbk_outputs_write_lists(lbk_outputs *out, uint64_t first, uint64_t count,
                                   const lbk_knn_candidate *lists);

/* Render predictions of queries [first, first + count) as CSV lines into a
 * malloc'd buffer; *len gets its size. */
lbk_status lbk_outputs_format_predictions(uint64_t first, uint64_t count, const int32_t *labels,
                                          char **text, size_t *len);
/* The same for task regress's values "query,value", each value %.17g: the
 * double reads back bit for bit. */
lbk_status lbk_outputs_format_values(uint64_t first, uint64_t count, const double *values,
                                     char **text, size_t *len);
/* Write rendered text at byte `offset` past the header. */
lbk_status lbk_outputs_write_text(lbk_outputs *out, uint64_t offset, const char *text,
                                  size_t len);

/* One query's probabilities row "query,p0,...,p(classes-1)\n" (%.9g each). */
void lbk_outputs_print_probabilities(FILE *f, uint64_t query, const double *p, int classes);
/* Write rendered probability rows at byte `offset` past the header. */
lbk_status lbk_outputs_write_probabilities(lbk_outputs *out, uint64_t offset, const char *text,
                                           size_t len);

/* Creator: write the report's partial file (renamed last by commit). */
lbk_status lbk_outputs_write_report(lbk_outputs *out, const char *path, const char *text,
                                    size_t len);

/* Close every file, reporting write-back errors. */
lbk_status lbk_outputs_close(lbk_outputs *out);
/* Creator, after every rank succeeded: rename the partial files into place,
 * all or (when a rename fails) none, previous versions kept. */
lbk_status lbk_outputs_commit(lbk_outputs *out);
/* On failure: close and remove partial files (creator removes; others close). */
void lbk_outputs_abort(lbk_outputs *out, bool remove_files);

#endif
