/* The insides of checkpoints (checkpoint.h) shared by their writing
 * (checkpoint.c), their resuming (checkpoint_resume.c) and the parts
 * (checkpoint_parts.c). A part is a run of bytes of one partial file that
 * only grows at its end: part i < LBK_JOB_OUTPUT_COUNT is output i's file
 * (whole, or this rank's rows of it), the others are held parts
 * (LBK_RUN_HELD_*, run_state.h). docs/design.md, "Checkpoints". */
#ifndef LBK_CHECKPOINT_IMPL_H
#define LBK_CHECKPOINT_IMPL_H

#include "checkpoint.h"
#include "outputs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A stream: the rows one rank searched in one run, in row order (ranges of
 * the query file), and its parts (where the plan owns slices): its rows of
 * the arrays, and its held files, named by its first row. */
typedef struct {
    uint64_t id;
    uint64_t ranges;
    lbk_run_range *range;
    uint64_t len[LBK_RUN_PARTS];
    uint32_t crc[LBK_RUN_PARTS];
    bool on[LBK_RUN_PARTS];
} lbk_checkpoint_stream;

/* A graph run's held file of one rank of one run (named by both). */
typedef struct {
    uint64_t run; /* that run's finished rows at its start */
    int rank;
    uint64_t len;
    uint32_t crc;
} lbk_checkpoint_graph_file;

/* What a resumed run's checkpoint held (every rank: rank 0's broadcast). */
struct lbk_checkpoint_kept {
    int partition;
    lbk_dtype points; /* the type the reference points were searched at ("points"
                       * line; none: float32, as every older checkpoint's) */
    uint64_t done;    /* finished rows */
    uint64_t text_offset, proba_offset;
    uint64_t hdf5_offset[LBK_JOB_OUTPUT_COUNT]; /* an HDF5 array's rows' start */
    lbk_checkpoint_stream whole;                /* whole files (plans that do not own slices) */
    lbk_checkpoint_stream *streams;             /* plans that own slices */
    uint64_t stream_count;
    lbk_checkpoint_graph_file *graph_files;
    uint64_t graph_file_count;
    unsigned char *state; /* every rank's scores, merged */
    size_t state_bytes;
    bool prev; /* read from PATH.prev */
};

/* Part i's key in the checkpoint's "part" lines ("output.neighbors",
 * "held.predictions"). */
const char *lbk_checkpoint_part_key(int i);
/* Output i's path in the job (LBK_JOB_OUTPUT_LIST order). */
const char *lbk_checkpoint_output_path(const lbk_job *job, int i);
/* Whether output i is the one named `key`. */
bool lbk_checkpoint_is_output(int i, const char *key);
lbk_outputs_shape lbk_checkpoint_shape(const lbk_run_state *s);
/* Whether output i is an HDF5 array: libhdf5 laid its file out whole at
 * its creation, so its part is its finished rows' bytes, in any plan. */
bool lbk_checkpoint_is_hdf5(const lbk_run_state *s, int i);
/* Part i's file on this rank: the output's partial file, or a held part's
 * file of this rank's stream, OUT.lbknn-partial.row-N. */
void lbk_checkpoint_part_name(const lbk_run_state *s, int i, char *buf, size_t size);
/* Held part i's file of the stream that starts at row `id`. */
void lbk_checkpoint_held_name(const lbk_run_state *s, int i, uint64_t id, char *buf, size_t size);
/* A graph run's held file of `rank` in the run that started with `run`
 * rows finished. */
void lbk_checkpoint_graph_name(const lbk_run_state *s, uint64_t run, int rank, char *buf,
                               size_t size);
/* This rank's stream's id (its first row; the query count if empty). */
uint64_t lbk_checkpoint_stream_id(const lbk_run_state *s);
/* Rank r's searched rows [*first, *first + *count) (plans that own slices). */
void lbk_checkpoint_rank_slice(const lbk_run_state *s, int r, uint64_t *first, uint64_t *count);
/* The CRC-32 of array output i's rows [first, first + count) of the query
 * file, from byte `skip` of them on, folded into *crc; *len grows by the
 * bytes read; fd the partial file. False as lbk_checkpoint_crc_bytes: the
 * caller says in its one line what the read was for. */
bool lbk_checkpoint_crc_rows(const lbk_run_state *s, int i, int fd, uint64_t first,
                             uint64_t count, uint64_t *skip, uint32_t *crc, uint64_t *len);
/* The CRC-32 of bytes [start, start + len) of fd folded into *crc (false:
 * a read failed, errno its cause, or the file ended early, errno 0:
 * lbk_checkpoint_read_error says which). */
bool lbk_checkpoint_crc_bytes(int fd, uint64_t start, uint64_t len, uint32_t *crc);
/* Why lbk_checkpoint_crc_bytes failed, from errno. */
const char *lbk_checkpoint_read_error(void);
/* The merge of src's scores into dst's (state bytes each). */
void lbk_checkpoint_merge_state(const lbk_run_state *s, unsigned char *dst,
                                const unsigned char *src);
void lbk_checkpoint_kept_free(struct lbk_checkpoint_kept *k);
/* s->kept_on: which parts this rank has. */
void lbk_checkpoint_plan_parts(lbk_run_state *s);
/* Rows of this run's searched ones (rank 0: all; an owned slice's) done
 * after `done` batches. */
uint64_t lbk_checkpoint_rows_done(const lbk_run_state *s, uint64_t done);

/* The job as printed, without the run section (malloc'd; NULL: no
 * memory), and the lines every checkpoint of this run starts with. */
char *lbk_checkpoint_canonical_job(const lbk_job *job, size_t *len);
void lbk_checkpoint_identity_lines(const lbk_run_state *s, uint32_t job_hash, FILE *f);

/* This rank's scores so far as bytes (the same size on every rank). */
size_t lbk_checkpoint_state_bytes(const lbk_run_state *s);
void lbk_checkpoint_pack_state(const lbk_run_state *s, unsigned char *p);
void lbk_checkpoint_unpack_state(lbk_run_state *s, const unsigned char *p);

/* PATH, PATH.prev and PATH.tmp removed. */
void lbk_checkpoint_remove_files(const lbk_job *job);

#endif
