/* Everything that crosses ranks: communicator set-up, failure agreement,
 * broadcasts, the K-list merge (a user-defined commutative MPI_Op), and the
 * per-phase timing statistics. MPI types stay inside this module and its
 * callers that include it. */
#ifndef LBK_COLLECTIVE_H
#define LBK_COLLECTIVE_H

#include "job.h"
#include "knn.h"
#include "status.h"

#include <stdint.h>

/* The MPI handles, private to this layer: nothing above it sees an MPI type. */
typedef struct lbk_comm_mpi lbk_comm_mpi;

typedef struct {
    lbk_comm_mpi *mpi;
    int rank, size;
    int local_rank, local_size;   /* within the node (MPI_COMM_TYPE_SHARED) */
} lbk_comm;

typedef enum { LBK_REDUCE_MIN, LBK_REDUCE_MAX, LBK_REDUCE_SUM } lbk_reduce_op;

/* MPI_Init_thread (funnelled: only the main thread calls MPI) and its
 * counterpart. Call lbk_dist_finalize only after lbk_dist_init succeeded. */
lbk_status lbk_dist_init(int *argc, char ***argv);
void lbk_dist_finalize(void);

/* After lbk_dist_init (or the caller's own MPI_Init): a duplicate of the
 * world communicator (MPI errors on it come back as codes and become
 * LBK_ERR_MPI), node-local rank and size, and the log's rank prefix
 * (lbk_log_set_rank). */
lbk_status lbk_comm_init(lbk_comm *comm);
void lbk_comm_free(lbk_comm *comm);

/* Every rank calls this before every collective step with its own status.
 * Returns LBK_OK when all ranks are OK; otherwise the local status on a rank
 * that failed and LBK_ERR_REMOTE on the others (which log nothing: the
 * failing rank already said why). Never blocks forever when a rank has
 * failed, because a failing rank still reaches the next agreement point. */
lbk_status lbk_agree(const lbk_comm *comm, lbk_status local);

/* Rank 0's job to every rank. */
lbk_status lbk_bcast_job(const lbk_comm *comm, lbk_job *job);
/* Rank 0's buffer of `count` floats to every rank (count may exceed INT_MAX). */
lbk_status lbk_bcast_floats(const lbk_comm *comm, float *data, uint64_t count);
lbk_status lbk_bcast_bytes(const lbk_comm *comm, void *data, uint64_t bytes);

/* Combine every rank's per-query K-lists (nq * k candidates, each list sorted
 * by (key, id), padded with {+inf, -1, UINT64_MAX}).
 *   LBK_MERGE_REDUCE: rank 0 receives all nq lists in `out` (nq * k); other
 *     ranks get *slice_count = 0.
 *   LBK_MERGE_REDUCE_SCATTER: rank r receives the lists of queries
 *     [*slice_first, *slice_first + *slice_count), a contiguous balanced slice.
 * `out` must hold nq * k candidates on every rank that may receive them; the
 * received lists are stored from out[0] on (rank 0: all nq; reduce-scatter:
 * the slice's *slice_count lists, query *slice_first first).
 * *bytes_moved: candidate bytes this rank hands to other ranks under the
 * simplest algorithm (reduce: every non-root rank sends its nq lists once;
 * reduce-scatter: every rank sends the lists outside its own slice). It is a
 * model, not a byte counter inside MPI: tree algorithms forward partial
 * results, so the wire total can differ by a small factor. */
lbk_status lbk_merge_candidates(const lbk_comm *comm, lbk_merge_mode mode,
                                const lbk_candidate *local, uint64_t nq, int k,
                                lbk_candidate *out, uint64_t *slice_first,
                                uint64_t *slice_count, uint64_t *bytes_moved);

/* The balanced contiguous slice of nq queries that rank r of p owns in
 * reduce-scatter mode: [r*nq/p, (r+1)*nq/p). */
void lbk_query_slice(uint64_t nq, int p, int r, uint64_t *first, uint64_t *count);

/* Testing hook: the most candidate bytes one MPI call of the merge or a
 * broadcast may carry (default 1 GiB, which keeps every MPI count far below
 * INT_MAX). Tests lower it to exercise the chunked paths with small data;
 * 0 restores the default. Not thread-safe; call it on every rank alike. */
void lbk_collective_set_chunk_bytes(uint64_t bytes);

/* Checked small collectives for the run driver (MPI errors return codes on
 * lbknn's communicator, so every call's result must be looked at). */
lbk_status lbk_allreduce_u64(const lbk_comm *comm, uint64_t *value, lbk_reduce_op op);
lbk_status lbk_allreduce_i32(const lbk_comm *comm, int32_t *value, lbk_reduce_op op);
/* Sum of `value` over the ranks before this one (0 on rank 0), and over all. */
lbk_status lbk_exscan_u64(const lbk_comm *comm, uint64_t value, uint64_t *before,
                          uint64_t *total);
/* Element-wise sum of `count` values onto rank 0, in place. */
lbk_status lbk_reduce_sum_u64(const lbk_comm *comm, uint64_t *values, uint64_t count);
/* Every rank's `count` doubles, in rank order, into `all` on rank 0. */
lbk_status lbk_gather_doubles(const lbk_comm *comm, const double *mine, int count, double *all);
/* Every rank's `bytes` bytes, in rank order, into `all` on every rank. */
lbk_status lbk_allgather_bytes(const lbk_comm *comm, const void *mine, void *all, int bytes);

/* min / avg / max over ranks of each of `count` values (all ranks get them). */
lbk_status lbk_reduce_stats(const lbk_comm *comm, const double *local, int count, double *min,
                            double *avg, double *max);

/* This rank's fair share of the node's cores for a CPU OpenCL device:
 * min(online cores / ranks on the node, cores in the rank's affinity mask),
 * at least 1; 0 when that is every online core (no limit needed). */
long lbk_node_core_share(const lbk_comm *comm);

#endif
