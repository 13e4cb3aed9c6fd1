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

/* Part i's key in the checkpoint's "part" lines ("output.neighbors",
 * "held.predictions"). */
const char *lbk_checkpoint_part_key(int i);
/* Output i's path in the job (LBK_JOB_OUTPUT_LIST order). */
const char *lbk_checkpoint_output_path(const lbk_job *job, int i);
/* Whether output i is the one named `key`. */
bool lbk_checkpoint_is_output(int i, const char *key);
lbk_outputs_shape lbk_checkpoint_shape(const lbk_run_state *s);
/* Part i's file on this rank: the output's partial file, or a held part's
 * file of this rank's own, OUT.lbknn-partial.rank-R. */
void lbk_checkpoint_part_name(const lbk_run_state *s, int i, char *buf, size_t size);
/* s->kept_on: which parts this rank has. */
void lbk_checkpoint_plan_parts(lbk_run_state *s);
/* Rows of this rank's owned slice done after `done` batches. */
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
