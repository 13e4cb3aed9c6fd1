/* Checkpoints (run.checkpoint): a run that keeps its outputs as partial
 * files PATH.lbknn-partial and, every run.checkpoint_s seconds after a whole
 * batch, records what a later `lbknn run JOB --resume` needs to continue
 * after that batch and end with the same bytes: the job (canonical form and
 * hash), the inputs' sizes and mtimes, the partition, the finished query
 * rows (as ranges of the query file: no rank count or batch size in it),
 * each partial file's length and CRC-32, the text outputs' offsets and the
 * scores so far. Written atomically (PATH.tmp, fsync, rename; the previous
 * one kept as PATH.prev). Where ranks own slices of the queries, each keeps
 * what it writes only at the end in held files of its own, and every rank's
 * parts are in the checkpoint (docs/design.md, "Checkpoints"). Private to
 * src/app. */
#ifndef LBK_CHECKPOINT_H
#define LBK_CHECKPOINT_H

#include "run_state.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* First thing in `run`, before MPI_Init and the job are there: a SIGUSR1
 * from then on is held as a stop request (a requeue's signal can come while
 * a rank is still starting, which the default action would kill) until
 * lbk_checkpoint_handle_signal decides what it means. */
void lbk_checkpoint_catch_early(void);

/* Every rank, after the job's broadcast and again before the batches (a
 * runtime opened in between may install its own handler): SIGUSR1 asks for
 * a stop with a checkpoint when run.checkpoint is set; without, it gets its
 * default action back, and one caught early is raised again. */
void lbk_checkpoint_handle_signal(const lbk_job *job);

/* Around what starts the OpenCL runtime, which puts its own handler on
 * SIGUSR1 (PoCL does, when its platform starts): the signal held back
 * (blocked, which the runtime's threads inherit), then
 * lbk_checkpoint_handle_signal's handler again and the signal let through,
 * so that one sent meanwhile reaches it instead of the runtime's (a SLURM
 * --signal during the start-up was lost there). */
void lbk_checkpoint_hold_signal(sigset_t *held);
void lbk_checkpoint_release_signal(const lbk_job *job, const sigset_t *held);

/* Collective, before the plan and the queries are read: with `resume`, the
 * checkpoint read by rank 0 and checked against the job and inputs (one
 * line naming the first item that differs), then on every rank the rows
 * it finished (s->todo: the others) and its partition (the plan's, so that
 * a partition the rank count chose stays); without, every row. */
lbk_status lbk_checkpoint_read(lbk_run_state *s, bool resume);

/* Collective, before any output exists: with `resume`, the checkpoint
 * lbk_checkpoint_read read: every part it names against its partial file
 * (each checked by one rank; one line naming the part and the file that
 * differ; nothing touched), the scores restored into rank 0's s, and
 * s->kept_cut the lengths rank 0 opens the outputs at; without, or with
 * neither checkpoint nor partial files, a fresh run's. */
lbk_status lbk_checkpoint_restore(lbk_run_state *s, bool resume);

/* Every rank whose plan owns slices, outputs open: its held files (what it
 * writes at the end), new and empty: each run's rows are held apart. */
lbk_status lbk_checkpoint_open_held(lbk_run_state *s);

/* The index's after_batch (collective): an owned slice's batch into the
 * held files; a checkpoint when rank 0's clock says one is due, or a stop
 * was asked for on any rank (then returns LBK_STOPPED on every rank). */
lbk_status lbk_checkpoint_after_batch(void *run_state, uint64_t done);

/* Collective, after the last batch of a plan that owns slices: rank 0
 * writes the predictions and probability rows, in row order, from every
 * held file, the checkpoint's and this run's ranks'. */
lbk_status lbk_checkpoint_write_held(lbk_run_state *s);

/* Task graph searched as queries (s->graph_queries): the slice's rows as
 * records into this rank's held file (`order`: each searched row's global
 * row). Every rank, after the last batch: the records of the checkpoint's
 * runs placed into this rank's rows of the graph. */
lbk_status lbk_checkpoint_hold_graph(lbk_run_state *s, const lbk_self_rows *rows,
                                     const lbk_index_slice *b, const uint32_t *order);
lbk_status lbk_checkpoint_load_graph(lbk_run_state *s);

/* Every rank, after the commit: its held files removed, and (rank 0) the
 * checkpoint files. */
void lbk_checkpoint_remove(lbk_run_state *s);
/* Every rank: the held files closed (kept for a resume). */
void lbk_checkpoint_close(lbk_run_state *s);

#endif
