/* Checkpoints (run.checkpoint): a run that keeps its outputs as partial
 * files PATH.lbknn-partial and, every run.checkpoint_s seconds after a whole
 * batch, records what a later `lbknn run JOB --resume` needs to continue
 * after that batch and end with the same bytes: the job (canonical form and
 * hash), P, partition and batches, the inputs' sizes and mtimes, each
 * partial file's length and CRC-32, the text outputs' offsets and the
 * scores so far. Written atomically (PATH.tmp, fsync, rename; the previous
 * one kept as PATH.prev). Only plans where rank 0 writes every output take
 * checkpoints (docs/design.md, "Checkpoints"). Private to src/app. */
#ifndef LBK_CHECKPOINT_H
#define LBK_CHECKPOINT_H

#include "run_state.h"

#include <stdbool.h>
#include <stdint.h>

/* Every rank, after the job's broadcast and again before the batches (a
 * runtime opened in between may install its own handler): SIGUSR1 asks for
 * a stop with a checkpoint (when run.checkpoint is set). */
void lbk_checkpoint_handle_signal(const lbk_job *job);

/* Rank 0, plan resolved: whether this run can take checkpoints (one line
 * saying why not). */
lbk_status lbk_checkpoint_supported(const lbk_run_state *s);

/* Rank 0, before any output exists: with `resume`, the checkpoint verified
 * against the job, P, inputs and every partial file (one line naming what
 * differs; nothing touched), its state restored into s and keep[] the
 * partial files' lengths; without, or with neither checkpoint nor partial
 * files, keep[] all 0 (a fresh run). */
lbk_status lbk_checkpoint_restore(lbk_run_state *s, bool resume,
                                  uint64_t keep[LBK_JOB_OUTPUT_COUNT]);

/* The index's after_batch (collective): writes a checkpoint when rank 0's
 * clock says one is due, or a stop was asked for on any rank (then returns
 * LBK_STOPPED on every rank). */
lbk_status lbk_checkpoint_after_batch(void *run_state, uint64_t done);

/* Rank 0, after the commit: the checkpoint files are removed. */
void lbk_checkpoint_remove(const lbk_run_state *s);

#endif
