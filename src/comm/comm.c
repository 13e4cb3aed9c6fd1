/* The communicator, the failure agreement, broadcasts and the small typed
 * collectives. With merge.c, the only MPI code in lbknn. */
#include "comm_job.h"
#include "comm_mpi.h"

#include "log.h"
#include "try.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CHUNK_BYTES (UINT64_C(1) << 30)

/* Only a testing hook changes this; everything else reads it, from any
 * thread (atomic: a process-wide setting, not a context's). */
static _Atomic uint64_t chunk_bytes = DEFAULT_CHUNK_BYTES;

void lbk_comm_set_chunk_bytes(uint64_t bytes)
{
    chunk_bytes = bytes ? bytes : DEFAULT_CHUNK_BYTES;
}

uint64_t lbk_comm_chunk_bytes(void) { return chunk_bytes; }

lbk_status lbk_comm_mpi_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return LBK_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error code %d", rc);
    lbk_error("%s failed: %s", what, msg);
    return LBK_ERR_MPI;
}

static lbk_status comm_init_over(lbk_comm *comm, MPI_Comm base);

lbk_status lbk_comm_init(lbk_comm *comm) { return comm_init_over(comm, MPI_COMM_WORLD); }

lbk_status lbk_comm_init_from(lbk_comm *comm, const void *mpi_comm)
{
    if (mpi_comm)
        return comm_init_over(comm, *(const MPI_Comm *)mpi_comm);
    return lbk_comm_init_alone(comm);
}

/* Rank 0 of 1 with no MPI communicator yet. */
static lbk_status comm_alloc_alone(lbk_comm *comm)
{
    comm->mpi = calloc(1, sizeof *comm->mpi);
    LBK_FAIL_IF(!comm->mpi, LBK_ERR_NOMEM, "out of host memory setting up the communicator");
    LBK_COMM_MPI(comm) = MPI_COMM_NULL;
    comm->rank = 0;
    comm->size = 1;
    comm->local_rank = 0;
    comm->local_size = 1;
    return LBK_OK;
}

lbk_status lbk_comm_init_alone(lbk_comm *comm)
{
    /* No MPI call ever sees it: every collective returns early for one rank. */
    LBK_TRY(comm_alloc_alone(comm));
    lbk_log_set_rank(0, 1);
    return LBK_OK;
}

bool lbk_comm_launched(void)
{
    static const char *const set_by_launchers[] = {
        "OMPI_COMM_WORLD_SIZE", /* Open MPI's mpirun */
        "PMIX_RANK",            /* a PMIx server: mpirun, prterun, srun --mpi=pmix */
        "PMI_RANK",             /* PMI-1/2: Hydra, srun --mpi=pmi2 */
        "PMI_FD",
        "SLURM_STEP_ID", /* srun, even without a PMI plugin: Open MPI says why it cannot join */
    };
    for (size_t i = 0; i < sizeof set_by_launchers / sizeof *set_by_launchers; i++)
        if (getenv(set_by_launchers[i]))
            return true;
    return false;
}

static lbk_status comm_init_over(lbk_comm *comm, MPI_Comm base)
{
    lbk_status st = LBK_OK;
    MPI_Comm local = MPI_COMM_NULL;
    LBK_TRY(comm_alloc_alone(comm));

    /* A private communicator keeps our collectives from matching any that a
     * library (or a test harness) posts on MPI_COMM_WORLD. */
    LBK_TRY_GOTO(st, lbk_comm_mpi_check(MPI_Comm_dup(base, &LBK_COMM_MPI(comm)), "MPI_Comm_dup"));
    /* Errors come back as codes so that they are logged with their cause and
     * travel through lbk_status like every other failure. */
    LBK_TRY_GOTO(
        st, lbk_comm_mpi_check(MPI_Comm_set_errhandler(LBK_COMM_MPI(comm), MPI_ERRORS_RETURN),
                               "MPI_Comm_set_errhandler"));
    LBK_TRY_GOTO(
        st, lbk_comm_mpi_check(MPI_Comm_rank(LBK_COMM_MPI(comm), &comm->rank), "MPI_Comm_rank"));
    LBK_TRY_GOTO(
        st, lbk_comm_mpi_check(MPI_Comm_size(LBK_COMM_MPI(comm), &comm->size), "MPI_Comm_size"));
    /* The node-local rank picks the device (one device per rank on a node)
     * and the local size sizes PoCL's thread share. */
    LBK_TRY_GOTO(st,
                 lbk_comm_mpi_check(MPI_Comm_split_type(LBK_COMM_MPI(comm), MPI_COMM_TYPE_SHARED,
                                                        comm->rank, MPI_INFO_NULL, &local),
                                    "MPI_Comm_split_type"));
    LBK_TRY_GOTO(
        st, lbk_comm_mpi_check(MPI_Comm_rank(local, &comm->local_rank), "MPI_Comm_rank (node)"));
    LBK_TRY_GOTO(
        st, lbk_comm_mpi_check(MPI_Comm_size(local, &comm->local_size), "MPI_Comm_size (node)"));
    lbk_log_set_rank(comm->rank, comm->size);

cleanup:
    if (local != MPI_COMM_NULL)
        MPI_Comm_free(&local);
    if (st != LBK_OK)
        lbk_comm_free(comm);
    return st;
}

void lbk_comm_free(lbk_comm *comm)
{
    if (!comm->mpi)
        return;
    if (LBK_COMM_MPI(comm) != MPI_COMM_NULL)
        MPI_Comm_free(&LBK_COMM_MPI(comm));
    free(comm->mpi);
    comm->mpi = NULL;
}

lbk_status lbk_comm_mpi_init(int *argc, char ***argv)
{
    int provided = 0;
    LBK_FAIL_IF(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS,
                LBK_ERR_MPI, "MPI initialisation failed");
    return LBK_OK;
}

void lbk_comm_mpi_finalize(void) { MPI_Finalize(); }

/* Agreement value: 0 = OK; a rank's own failure outranks a remote status
 * it may pass on from an earlier step, so the report names the real cause. */
static int agree_encode(lbk_status s)
{
    if (s == LBK_OK)
        return 0;
    if (s == LBK_ERR_REMOTE)
        return 1;
    if (s == LBK_ERR_REMOTE_INPUT)
        return 2;
    return (int)s + 3;
}

static lbk_status agree_decode(int v)
{
    if (v == 0)
        return LBK_OK;
    if (v == 1)
        return LBK_ERR_REMOTE;
    if (v == 2)
        return LBK_ERR_REMOTE_INPUT;
    return (lbk_status)(v - 3);
}

lbk_status lbk_comm_agree(const lbk_comm *comm, lbk_status local)
{
    if (comm->size <= 1)
        return local;
    /* MAXLOC returns the worst code and the lowest rank holding it, in one
     * collective, so the surviving ranks can say who failed without a second
     * round trip. */
    struct {
        int value;
        int rank;
    } mine = {agree_encode(local), comm->rank}, all = {0, 0};
    LBK_TRY(lbk_comm_mpi_check(
        MPI_Allreduce(&mine, &all, 1, MPI_2INT, MPI_MAXLOC, LBK_COMM_MPI(comm)),
        "MPI_Allreduce (failure agreement)"));
    if (all.value == 0)
        return LBK_OK;
    const lbk_status cause = agree_decode(all.value);
    /* One exit code for the whole job, the cause's: a rank that failed in
     * another class at the same step (it logged its own error) ends in the
     * cause's class too. */
    if (local != LBK_OK && !lbk_status_is_remote(local) &&
        lbk_status_exit_code(local) == lbk_status_exit_code(cause))
        return local;
    /* The failing rank logged the error. Rank 0, when healthy, adds one
     * informational line that ties every other rank's exit to it, so a
     * cluster log shows the cause once and never a second error line; when
     * rank 0 is the one that failed, its error line says it all. */
    if (comm->rank == 0 && local == LBK_OK)
        lbk_info("stopping: rank %d failed (%s)", all.rank, lbk_status_name(cause));
    return lbk_status_remote(cause);
}

/* Bytes one MPI call of a byte buffer may carry: the chunk, as an int. */
static uint64_t byte_step(void)
{
    const uint64_t chunk = chunk_bytes;
    return chunk < (uint64_t)INT_MAX ? chunk : (uint64_t)INT_MAX;
}

lbk_status lbk_comm_bcast_bytes(const lbk_comm *comm, void *data, uint64_t bytes)
{
    if (comm->size <= 1)
        return LBK_OK;
    unsigned char *p = data;
    const uint64_t step = byte_step();
    for (uint64_t done = 0; done < bytes;) {
        const uint64_t n = bytes - done < step ? bytes - done : step;
        LBK_TRY(lbk_comm_mpi_check(MPI_Bcast(p + done, (int)n, MPI_BYTE, 0, LBK_COMM_MPI(comm)),
                                   "MPI_Bcast"));
        done += n;
    }
    return LBK_OK;
}

lbk_status lbk_comm_bcast_floats(const lbk_comm *comm, float *data, uint64_t count)
{
    /* Every rank runs the same float format, so the bytes are the values. */
    return lbk_comm_bcast_bytes(comm, data, count * sizeof *data);
}

lbk_status lbk_comm_bcast_job(const lbk_comm *comm, lbk_job *job)
{
    return lbk_comm_bcast_bytes(comm, job, sizeof *job);
}

static MPI_Op mpi_op(lbk_comm_reduce_op op)
{
    switch (op) {
    case LBK_REDUCE_MIN: return MPI_MIN;
    case LBK_REDUCE_MAX: return MPI_MAX;
    case LBK_REDUCE_SUM: return MPI_SUM;
    }
    return MPI_OP_NULL;
}

lbk_status lbk_comm_allreduce_u64(const lbk_comm *comm, uint64_t *value, lbk_comm_reduce_op op)
{
    return lbk_comm_mpi_allreduce(comm, MPI_IN_PLACE, value, 1, sizeof *value, MPI_UINT64_T,
                                  mpi_op(op), "MPI_Allreduce");
}

lbk_status lbk_comm_allreduce_i32(const lbk_comm *comm, int32_t *value, lbk_comm_reduce_op op)
{
    return lbk_comm_mpi_allreduce(comm, MPI_IN_PLACE, value, 1, sizeof *value, MPI_INT32_T,
                                  mpi_op(op), "MPI_Allreduce");
}

lbk_status lbk_comm_exscan_u64(const lbk_comm *comm, uint64_t value, uint64_t *before,
                               uint64_t *total)
{
    *before = 0;
    *total = value;
    if (comm->size == 1)
        return LBK_OK;
    LBK_TRY(lbk_comm_mpi_check(
        MPI_Exscan(&value, before, 1, MPI_UINT64_T, MPI_SUM, LBK_COMM_MPI(comm)), "MPI_Exscan"));
    /* MPI leaves rank 0's result undefined. */
    if (comm->rank == 0)
        *before = 0;
    return lbk_comm_mpi_check(
        MPI_Allreduce(&value, total, 1, MPI_UINT64_T, MPI_SUM, LBK_COMM_MPI(comm)),
        "MPI_Allreduce");
}

lbk_status lbk_comm_reduce_sum_u64(const lbk_comm *comm, uint64_t *values, uint64_t count)
{
    if (comm->size == 1)
        return LBK_OK;
    const uint64_t chunk = chunk_bytes;
    const uint64_t step = chunk >= sizeof *values ? chunk / sizeof *values : 1;
    for (uint64_t at = 0; at < count; at += step) {
        const int n = (int)(count - at < step ? count - at : step);
        void *send = comm->rank == 0 ? MPI_IN_PLACE : (void *)(values + at);
        LBK_TRY(lbk_comm_mpi_check(
            MPI_Reduce(send, values + at, n, MPI_UINT64_T, MPI_SUM, 0, LBK_COMM_MPI(comm)),
            "MPI_Reduce"));
    }
    return LBK_OK;
}

lbk_status lbk_comm_allreduce_or_bytes(const lbk_comm *comm, void *data, uint64_t bytes)
{
    if (comm->size == 1)
        return LBK_OK;
    const uint64_t step = byte_step();
    for (uint64_t at = 0; at < bytes; at += step) {
        const int n = (int)(bytes - at < step ? bytes - at : step);
        LBK_TRY(lbk_comm_mpi_check(MPI_Allreduce(MPI_IN_PLACE, (unsigned char *)data + at, n,
                                                 MPI_BYTE, MPI_BOR, LBK_COMM_MPI(comm)),
                                   "MPI_Allreduce"));
    }
    return LBK_OK;
}

lbk_status lbk_comm_gather_doubles(const lbk_comm *comm, const double *mine, int count,
                                   double *all)
{
    if (comm->size == 1) {
        memmove(all, mine, (size_t)count * sizeof *all);
        return LBK_OK;
    }
    return lbk_comm_mpi_check(
        MPI_Gather(mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, 0, LBK_COMM_MPI(comm)),
        "MPI_Gather");
}

lbk_status lbk_comm_allgather_bytes(const lbk_comm *comm, const void *mine, void *all, int bytes)
{
    if (comm->size == 1) {
        memmove(all, mine, (size_t)bytes);
        return LBK_OK;
    }
    return lbk_comm_mpi_check(
        MPI_Allgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, LBK_COMM_MPI(comm)),
        "MPI_Allgather");
}

lbk_status lbk_comm_reduce_stats(const lbk_comm *comm, const double *local, int count,
                                 double *min, double *avg, double *max)
{
    LBK_TRY(lbk_comm_mpi_allreduce(comm, local, min, count, sizeof *min, MPI_DOUBLE, MPI_MIN,
                                   "MPI_Allreduce (min)"));
    LBK_TRY(lbk_comm_mpi_allreduce(comm, local, avg, count, sizeof *avg, MPI_DOUBLE, MPI_SUM,
                                   "MPI_Allreduce (sum)"));
    LBK_TRY(lbk_comm_mpi_allreduce(comm, local, max, count, sizeof *max, MPI_DOUBLE, MPI_MAX,
                                   "MPI_Allreduce (max)"));
    for (int i = 0; i < count; i++)
        avg[i] /= comm->size;
    return LBK_OK;
}

lbk_status lbk_comm_mpi_allreduce(const lbk_comm *comm, const void *send, void *recv, int count,
                                  size_t item_bytes, MPI_Datatype type, MPI_Op op,
                                  const char *what)
{
    if (comm->size == 1) {
        if (send != MPI_IN_PLACE)
            memmove(recv, send, (size_t)count * item_bytes);
        return LBK_OK;
    }
    return lbk_comm_mpi_check(MPI_Allreduce(send, recv, count, type, op, LBK_COMM_MPI(comm)),
                              what);
}
