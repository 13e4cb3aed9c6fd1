/* Everything that crosses ranks. The only MPI code in lbknn lives here, so
 * every MPI error becomes an lbk_status at one place. */
/* sched_getaffinity / CPU_COUNT: how many cores the launcher bound us to. */
#define _GNU_SOURCE
#include "collective.h"

#include "log.h"

#include <mpi.h>

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_CHUNK_BYTES (UINT64_C(1) << 30)

/* Only a testing hook changes this; everything else reads it. */
static uint64_t chunk_bytes = DEFAULT_CHUNK_BYTES;

struct lbk_comm_mpi {
    MPI_Comm comm;
};

#define COMM(c) ((c)->mpi->comm)

void lbk_collective_set_chunk_bytes(uint64_t bytes)
{
    chunk_bytes = bytes ? bytes : DEFAULT_CHUNK_BYTES;
}

static lbk_status mpi_check(int rc, const char *what)
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

lbk_status lbk_comm_init(lbk_comm *comm)
{
    lbk_status st = LBK_OK;
    MPI_Comm local = MPI_COMM_NULL;
    comm->mpi = calloc(1, sizeof *comm->mpi);
    if (!comm->mpi) {
        lbk_error("out of host memory setting up MPI");
        return LBK_ERR_NOMEM;
    }
    COMM(comm) = MPI_COMM_NULL;
    comm->rank = 0;
    comm->size = 1;
    comm->local_rank = 0;
    comm->local_size = 1;

    /* A private communicator keeps our collectives from matching any that a
     * library (or a test harness) posts on MPI_COMM_WORLD. */
    if ((st = mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &COMM(comm)), "MPI_Comm_dup")))
        goto cleanup;
    /* Errors come back as codes so that they are logged with their cause and
     * travel through lbk_status like every other failure. */
    if ((st = mpi_check(MPI_Comm_set_errhandler(COMM(comm), MPI_ERRORS_RETURN),
                        "MPI_Comm_set_errhandler")))
        goto cleanup;
    if ((st = mpi_check(MPI_Comm_rank(COMM(comm), &comm->rank), "MPI_Comm_rank")) ||
        (st = mpi_check(MPI_Comm_size(COMM(comm), &comm->size), "MPI_Comm_size")))
        goto cleanup;
    /* The node-local rank picks the device (one device per rank on a node)
     * and the local size sizes PoCL's thread share. */
    if ((st = mpi_check(MPI_Comm_split_type(COMM(comm), MPI_COMM_TYPE_SHARED, comm->rank,
                                            MPI_INFO_NULL, &local),
                        "MPI_Comm_split_type")))
        goto cleanup;
    if ((st = mpi_check(MPI_Comm_rank(local, &comm->local_rank), "MPI_Comm_rank (node)")) ||
        (st = mpi_check(MPI_Comm_size(local, &comm->local_size), "MPI_Comm_size (node)")))
        goto cleanup;
    lbk_log_set_rank(comm->rank, comm->size);

cleanup:
    if (local != MPI_COMM_NULL)
        MPI_Comm_free(&local);
    if (st)
        lbk_comm_free(comm);
    return st;
}

void lbk_comm_free(lbk_comm *comm)
{
    if (!comm->mpi)
        return;
    if (COMM(comm) != MPI_COMM_NULL)
        MPI_Comm_free(&COMM(comm));
    free(comm->mpi);
    comm->mpi = NULL;
}

lbk_status lbk_dist_init(int *argc, char ***argv)
{
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        lbk_error("MPI initialisation failed");
        return LBK_ERR_MPI;
    }
    return LBK_OK;
}

void lbk_dist_finalize(void) { MPI_Finalize(); }

static MPI_Op mpi_op(lbk_reduce_op op)
{
    switch (op) {
    case LBK_REDUCE_MIN: return MPI_MIN;
    case LBK_REDUCE_MAX: return MPI_MAX;
    case LBK_REDUCE_SUM: return MPI_SUM;
    }
    return MPI_OP_NULL;
}

/* Agreement value: 0 = OK; a rank's own failure outranks LBK_ERR_REMOTE it
 * may pass on from an earlier step, so the report names the real cause. */
static int agree_encode(lbk_status s)
{
    if (s == LBK_OK)
        return 0;
    if (s == LBK_ERR_REMOTE)
        return 1;
    return (int)s + 1;
}

static lbk_status agree_decode(int v)
{
    if (v == 0)
        return LBK_OK;
    if (v == 1)
        return LBK_ERR_REMOTE;
    return (lbk_status)(v - 1);
}

lbk_status lbk_agree(const lbk_comm *comm, lbk_status local)
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
    int rc = MPI_Allreduce(&mine, &all, 1, MPI_2INT, MPI_MAXLOC, COMM(comm));
    if (rc != MPI_SUCCESS)
        return mpi_check(rc, "MPI_Allreduce (failure agreement)");
    if (all.value == 0)
        return LBK_OK;
    if (local != LBK_OK)
        return local;
    /* The failing rank logged the error. Rank 0, when healthy, adds one
     * informational line that ties every other rank's exit to it, so a
     * cluster log shows the cause once and never a second error line; when
     * rank 0 is the one that failed, its error line says it all. */
    if (comm->rank == 0)
        lbk_info("stopping: rank %d failed (%s)", all.rank,
                 lbk_status_name(agree_decode(all.value)));
    return LBK_ERR_REMOTE;
}

lbk_status lbk_bcast_bytes(const lbk_comm *comm, void *data, uint64_t bytes)
{
    if (comm->size <= 1)
        return LBK_OK;
    unsigned char *p = data;
    uint64_t step = chunk_bytes < (uint64_t)INT_MAX ? chunk_bytes : (uint64_t)INT_MAX;
    for (uint64_t done = 0; done < bytes;) {
        uint64_t n = bytes - done < step ? bytes - done : step;
        lbk_status st =
            mpi_check(MPI_Bcast(p + done, (int)n, MPI_BYTE, 0, COMM(comm)), "MPI_Bcast");
        if (st)
            return st;
        done += n;
    }
    return LBK_OK;
}

lbk_status lbk_bcast_floats(const lbk_comm *comm, float *data, uint64_t count)
{
    /* Every rank runs the same float format, so the bytes are the values. */
    return lbk_bcast_bytes(comm, data, count * sizeof *data);
}

lbk_status lbk_bcast_job(const lbk_comm *comm, lbk_job *job)
{
    return lbk_bcast_bytes(comm, job, sizeof *job);
}

/* The MPI user function. It sees only the datatype, never our K, so K comes
 * from the datatype's size: one element is one whole K-list. That keeps the
 * op free of global state, and MPI's segmented reductions can never cut a
 * list in two. */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int bytes = 0;
    MPI_Type_size(*type, &bytes);
    int k = bytes / (int)sizeof(lbk_candidate);
    const lbk_candidate *a = in;
    lbk_candidate *b = inout;
    lbk_candidate tmp[LBK_K_MAX];
    for (int q = 0; q < *len; q++) {
        lbk_merge_lists(a + (size_t)q * k, b + (size_t)q * k, tmp, k);
        memcpy(b + (size_t)q * k, tmp, (size_t)k * sizeof *tmp);
    }
}

void lbk_query_slice(uint64_t nq, int p, int r, uint64_t *first, uint64_t *count)
{
    /* nq * r can exceed 64 bits only for absurd nq; split to stay exact. */
    uint64_t lo = (nq / (uint64_t)p) * (uint64_t)r + (nq % (uint64_t)p) * (uint64_t)r / (uint64_t)p;
    uint64_t hi = (nq / (uint64_t)p) * (uint64_t)(r + 1) +
                  (nq % (uint64_t)p) * (uint64_t)(r + 1) / (uint64_t)p;
    *first = lo;
    *count = hi - lo;
}

static lbk_status merge_reduce(const lbk_comm *comm, const lbk_candidate *local, uint64_t nq,
                               int k, lbk_candidate *out, MPI_Datatype type, MPI_Op op,
                               uint64_t step)
{
    for (uint64_t q = 0; q < nq; q += step) {
        uint64_t n = nq - q < step ? nq - q : step;
        size_t off = (size_t)q * (size_t)k;
        lbk_status st = mpi_check(MPI_Reduce(local + off, comm->rank == 0 ? out + off : NULL,
                                             (int)n, type, op, 0, COMM(comm)),
                                  "MPI_Reduce (candidate merge)");
        if (st)
            return st;
    }
    return LBK_OK;
}

/* Reduce-scatter in rounds: round j carries, for every rank r, at most `per`
 * lists of r's slice. One round with the caller's buffer when it fits; more
 * rounds pack each round's pieces in rank order, as MPI expects. */
static lbk_status merge_reduce_scatter(const lbk_comm *comm, const lbk_candidate *local,
                                       uint64_t nq, int k, lbk_candidate *out, MPI_Datatype type,
                                       MPI_Op op, uint64_t step)
{
    lbk_status st = LBK_OK;
    const int p = comm->size;
    const size_t list = (size_t)k;
    int *counts = malloc((size_t)p * sizeof *counts);
    uint64_t *first = malloc((size_t)p * sizeof *first);
    uint64_t *total = malloc((size_t)p * sizeof *total);
    lbk_candidate *pack = NULL;
    const uint64_t per = step / (uint64_t)p ? step / (uint64_t)p : 1;
    uint64_t rounds = 1;
    if (!counts || !first || !total) {
        lbk_error("out of memory for the reduce-scatter plan (%d ranks)", p);
        st = LBK_ERR_NOMEM;
    } else {
        uint64_t longest = 0;
        for (int r = 0; r < p; r++) {
            lbk_query_slice(nq, p, r, &first[r], &total[r]);
            if (total[r] > longest)
                longest = total[r];
        }
        rounds = longest ? (longest + per - 1) / per : 1;
        if (rounds > 1) {
            pack = malloc((size_t)per * (size_t)p * list * sizeof *pack);
            if (!pack) {
                lbk_error("out of memory for a %llu-list merge buffer",
                          (unsigned long long)(per * (uint64_t)p));
                st = LBK_ERR_NOMEM;
            }
        }
    }
    /* A rank that could not allocate its plan must not leave the others
     * waiting in MPI_Reduce_scatter: every rank learns of it first. */
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    for (uint64_t j = 0; j < rounds; j++) {
        size_t packed = 0;
        for (int r = 0; r < p; r++) {
            uint64_t done = j * per;
            uint64_t n = total[r] > done ? total[r] - done : 0;
            if (n > per)
                n = per;
            counts[r] = (int)n;
            if (pack && n)
                memcpy(pack + packed * list, local + (size_t)(first[r] + done) * list,
                       (size_t)n * list * sizeof *pack);
            packed += (size_t)n;
        }
        if ((st = mpi_check(MPI_Reduce_scatter(pack ? pack : local,
                                               out + (size_t)(j * per) * list, counts, type,
                                               op, COMM(comm)),
                            "MPI_Reduce_scatter (candidate merge)")))
            goto cleanup;
    }

cleanup:
    free(pack);
    free(total);
    free(first);
    free(counts);
    return st;
}

lbk_status lbk_merge_candidates(const lbk_comm *comm, lbk_merge_mode mode,
                                const lbk_candidate *local, uint64_t nq, int k,
                                lbk_candidate *out, uint64_t *slice_first,
                                uint64_t *slice_count, uint64_t *bytes_moved)
{
    lbk_status st = LBK_OK;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    const uint64_t list_bytes = (uint64_t)k * sizeof(lbk_candidate);
    *bytes_moved = 0;
    *slice_first = 0;
    *slice_count = 0;

    if (k < 1 || k > LBK_K_MAX) {
        lbk_error("merge of %d-candidate lists: K must be in [1, %d]", k, LBK_K_MAX);
        st = LBK_ERR_INTERNAL;
        goto cleanup;
    }
    if (mode == LBK_MERGE_REDUCE_SCATTER)
        lbk_query_slice(nq, comm->size, comm->rank, slice_first, slice_count);
    else if (comm->rank == 0)
        *slice_count = nq;

    if (comm->size == 1) {
        memcpy(out, local, (size_t)nq * (size_t)list_bytes);
        goto cleanup;
    }

    uint64_t step = chunk_bytes / list_bytes;
    if (step < 1)
        step = 1;
    if (step > INT_MAX)
        step = INT_MAX;
    if ((st = mpi_check(MPI_Type_contiguous((int)list_bytes, MPI_BYTE, &type),
                        "MPI_Type_contiguous")) ||
        (st = mpi_check(MPI_Type_commit(&type), "MPI_Type_commit")) ||
        (st = mpi_check(MPI_Op_create(merge_op, 1, &op), "MPI_Op_create")))
        goto cleanup;

    if (mode == LBK_MERGE_REDUCE_SCATTER) {
        st = merge_reduce_scatter(comm, local, nq, k, out, type, op, step);
        *bytes_moved = (nq - *slice_count) * list_bytes;
    } else {
        st = merge_reduce(comm, local, nq, k, out, type, op, step);
        *bytes_moved = comm->rank == 0 ? 0 : nq * list_bytes;
    }

cleanup:
    if (op != MPI_OP_NULL)
        MPI_Op_free(&op);
    if (type != MPI_DATATYPE_NULL)
        MPI_Type_free(&type);
    return st;
}

lbk_status lbk_allreduce_u64(const lbk_comm *comm, uint64_t *value, lbk_reduce_op op)
{
    return mpi_check(MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_UINT64_T, mpi_op(op), COMM(comm)),
                     "MPI_Allreduce");
}

lbk_status lbk_allreduce_i32(const lbk_comm *comm, int32_t *value, lbk_reduce_op op)
{
    return mpi_check(MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INT32_T, mpi_op(op), COMM(comm)),
                     "MPI_Allreduce");
}

lbk_status lbk_exscan_u64(const lbk_comm *comm, uint64_t value, uint64_t *before,
                          uint64_t *total)
{
    lbk_status st;
    *before = 0;
    *total = value;
    if (comm->size == 1)
        return LBK_OK;
    if ((st = mpi_check(MPI_Exscan(&value, before, 1, MPI_UINT64_T, MPI_SUM, COMM(comm)),
                        "MPI_Exscan")) != LBK_OK)
        return st;
    /* MPI leaves rank 0's result undefined. */
    if (comm->rank == 0)
        *before = 0;
    return mpi_check(MPI_Allreduce(&value, total, 1, MPI_UINT64_T, MPI_SUM, COMM(comm)),
                     "MPI_Allreduce");
}

lbk_status lbk_reduce_sum_u64(const lbk_comm *comm, uint64_t *values, uint64_t count)
{
    lbk_status st = LBK_OK;
    const uint64_t step = chunk_bytes / sizeof *values;
    for (uint64_t at = 0; at < count && st == LBK_OK; at += step) {
        const int n = (int)(count - at < step ? count - at : step);
        void *send = comm->rank == 0 ? MPI_IN_PLACE : (void *)(values + at);
        st = mpi_check(MPI_Reduce(send, values + at, n, MPI_UINT64_T, MPI_SUM, 0, COMM(comm)),
                       "MPI_Reduce");
    }
    return st;
}

lbk_status lbk_gather_doubles(const lbk_comm *comm, const double *mine, int count, double *all)
{
    return mpi_check(MPI_Gather(mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, 0, COMM(comm)),
                     "MPI_Gather");
}

lbk_status lbk_allgather_bytes(const lbk_comm *comm, const void *mine, void *all, int bytes)
{
    return mpi_check(MPI_Allgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, COMM(comm)),
                     "MPI_Allgather");
}

lbk_status lbk_reduce_stats(const lbk_comm *comm, const double *local, int count, double *min,
                            double *avg, double *max)
{
    lbk_status st = LBK_OK;
    if ((st = mpi_check(MPI_Allreduce(local, min, count, MPI_DOUBLE, MPI_MIN, COMM(comm)),
                        "MPI_Allreduce (min)")) ||
        (st = mpi_check(MPI_Allreduce(local, avg, count, MPI_DOUBLE, MPI_SUM, COMM(comm)),
                        "MPI_Allreduce (sum)")) ||
        (st = mpi_check(MPI_Allreduce(local, max, count, MPI_DOUBLE, MPI_MAX, COMM(comm)),
                        "MPI_Allreduce (max)")))
        goto cleanup;
    for (int i = 0; i < count; i++)
        avg[i] /= comm->size;

cleanup:
    return st;
}

/* Cores this process may run on: its affinity mask where the OS has one
 * (launchers bind ranks: Open MPI's mpirun binds to a core for up to two
 * ranks, SLURM confines tasks to cpusets), else every online core. */
static long usable_cores(long online)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < online)
        return CPU_COUNT(&set);
#endif
    return online;
}

long lbk_node_core_share(const lbk_comm *comm)
{
    /* PoCL's CPU device starts one worker thread per online core of the node
     * in every process, whatever the process's affinity. With several ranks
     * on a node that is ranks x cores threads fighting for the cores, and the
     * slowest rank sets the pace of every merge; a rank bound to a few cores
     * would run all those threads on them. So: an equal share of the node,
     * and never more than the cores the rank is bound to. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 1)
        return 0;
    long share = online / (comm->local_size > 0 ? comm->local_size : 1);
    long bound = usable_cores(online);
    if (bound < share)
        share = bound;
    if (share < 1)
        share = 1;
    return share >= online ? 0 : share;
}
