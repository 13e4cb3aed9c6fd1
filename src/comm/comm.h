/* The communicator and the small collectives: set-up, the failure agreement
 * every rank runs before each collective step, broadcasts, and typed
 * reductions for the run driver. No MPI type crosses this interface. */
#ifndef LBK_COMM_H
#define LBK_COMM_H

#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The MPI handles, private to this layer (comm_mpi.h). */
typedef struct lbk_comm_mpi lbk_comm_mpi;

typedef struct {
    lbk_comm_mpi *mpi;
    int rank, size;
    int local_rank, local_size; /* within the node (MPI_COMM_TYPE_SHARED) */
} lbk_comm;

typedef enum { LBK_REDUCE_MIN, LBK_REDUCE_MAX, LBK_REDUCE_SUM } lbk_comm_reduce_op;

/* MPI_Init_thread (funnelled: only the main thread calls MPI) and its
 * counterpart. Call lbk_comm_mpi_finalize only after lbk_comm_mpi_init succeeded. */
lbk_status lbk_comm_mpi_init(int *argc, char ***argv);
void lbk_comm_mpi_finalize(void);

/* The MPI library this process runs with, its first line ("Open MPI v4.1.4,
 * package: ..."), started or not (comm_version.c). */
void lbk_comm_library_version(char *buf, size_t size);

/* After lbk_comm_mpi_init (or the caller's own MPI_Init): a duplicate of the
 * world communicator (MPI errors on it come back as codes and become
 * LBK_ERR_MPI), node-local rank and size, and the log's rank prefix
 * (lbk_log_set_rank). */
lbk_status lbk_comm_init(lbk_comm *comm);
/* The same over a library caller's communicator: `mpi_comm` the address of
 * an MPI_Comm, or NULL for this process alone (lbk_comm_init_alone: MPI is
 * neither started nor used, whether or not the caller started it). */
lbk_status lbk_comm_init_from(lbk_comm *comm, const void *mpi_comm);
/* This process alone, without MPI (not started, never needed): rank 0 of
 * 1, and every collective below is the identity on this rank's data, as
 * MPI's are for one rank. */
lbk_status lbk_comm_init_alone(lbk_comm *comm);
/* True when a launcher started this process as an MPI rank: Open MPI's
 * mpirun, any PMIx server (mpirun, prterun, srun --mpi=pmix), a PMI-1/2
 * one (srun --mpi=pmi2, Hydra), or a Slurm job step (srun), where Open MPI
 * must start even to refuse a launch it cannot join. Otherwise a run can go
 * alone: Open MPI's singleton start alone takes 0.3-0.6 s. */
bool lbk_comm_launched(void);
void lbk_comm_free(lbk_comm *comm);

/* Every rank calls this before every collective step with its own status.
 * Returns LBK_OK when all ranks are OK; otherwise the local status on a rank
 * that failed and a remote status (lbk_status_remote) on the others (which
 * log nothing: the failing rank already said why). The cause is the worst
 * status of the step (lowest rank on a tie); every rank returns a status of
 * the cause's exit code, a failing rank of another class a remote one, so
 * the whole job exits with one code. Never blocks forever when a rank has
 * failed, because a failing rank still reaches the next agreement point. */
lbk_status lbk_comm_agree(const lbk_comm *comm, lbk_status local);

/* Rank 0's buffer of `count` floats to every rank (count may exceed INT_MAX). */
lbk_status lbk_comm_bcast_floats(const lbk_comm *comm, float *data, uint64_t count);
lbk_status lbk_comm_bcast_bytes(const lbk_comm *comm, void *data, uint64_t bytes);

/* Testing hook: the most bytes one MPI call of the merge, a broadcast or a
 * sum may carry (default 1 GiB, which keeps every MPI count far below
 * INT_MAX). Tests lower it to exercise the chunked paths with small data;
 * 0 restores the default. Not thread-safe; call it on every rank alike. */
void lbk_comm_set_chunk_bytes(uint64_t bytes);

/* Checked small collectives for the run driver (MPI errors return codes on
 * lbknn's communicator, so every call's result must be looked at). */
lbk_status lbk_comm_allreduce_u64(const lbk_comm *comm, uint64_t *value, lbk_comm_reduce_op op);
lbk_status lbk_comm_allreduce_i32(const lbk_comm *comm, int32_t *value, lbk_comm_reduce_op op);
/* Sum of `value` over the ranks before this one (0 on rank 0), and over all. */
lbk_status lbk_comm_exscan_u64(const lbk_comm *comm, uint64_t value, uint64_t *before,
                               uint64_t *total);
/* Bitwise OR of `bytes` bytes over every rank, in place on every rank: a
 * buffer each of whose bytes at most one rank has set gathers exactly. */
lbk_status lbk_comm_allreduce_or_bytes(const lbk_comm *comm, void *data, uint64_t bytes);
/* Element-wise sum of `count` values onto rank 0, in place. */
lbk_status lbk_comm_reduce_sum_u64(const lbk_comm *comm, uint64_t *values, uint64_t count);
/* Every rank's `count` doubles, in rank order, into `all` on rank 0. */
lbk_status lbk_comm_gather_doubles(const lbk_comm *comm, const double *mine, int count,
                                   double *all);
/* Every rank's `bytes` bytes, in rank order, into `all` on every rank. */
lbk_status lbk_comm_allgather_bytes(const lbk_comm *comm, const void *mine, void *all, int bytes);

/* min / avg / max over ranks of each of `count` values (all ranks get them). */
lbk_status lbk_comm_reduce_stats(const lbk_comm *comm, const double *local, int count,
                                 double *min, double *avg, double *max);

#endif
