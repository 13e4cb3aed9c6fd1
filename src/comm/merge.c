/* The K-list merge across ranks: one MPI element is one whole K-list, the
 * operator merges two lists into the K best (commutative and associative),
 * and MPI may combine in any order and grouping. */
#include "merge.h"

#include "comm_mpi.h"
#include "log.h"
#include "row_split.h"
#include "try.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The MPI user function. It sees only the datatype, never our K, so K comes
 * from the datatype's size: one element is one whole K-list. That keeps the
 * op free of global state, and MPI's segmented reductions can never cut a
 * list in two. The merge is written straight over inout: no K-list on the
 * stack (64 KiB at K = 4096, and MPI may call this on a thread of its own). */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int bytes = 0;
    MPI_Type_size(*type, &bytes);
    int k = bytes / (int)sizeof(lbk_knn_candidate);
    const lbk_knn_candidate *a = in;
    lbk_knn_candidate *b = inout;
    for (int q = 0; q < *len; q++)
        lbk_knn_merge_into(a + (size_t)q * k, b + (size_t)q * k, k);
}

static lbk_status merge_reduce(const lbk_comm *comm, const lbk_knn_candidate *local, uint64_t nq,
                               int k, lbk_knn_candidate *out, MPI_Datatype type, MPI_Op op,
                               uint64_t step)
{
    for (uint64_t q = 0; q < nq; q += step) {
        uint64_t n = nq - q < step ? nq - q : step;
        size_t off = (size_t)q * (size_t)k;
        LBK_TRY(lbk_comm_mpi_check(MPI_Reduce(local + off, comm->rank == 0 ? out + off : NULL,
                                              (int)n, type, op, 0, LBK_COMM_MPI(comm)),
                                   "MPI_Reduce (candidate merge)"));
    }
    return LBK_OK;
}

/* Reduce-scatter in rounds: round j carries, for every rank r, at most `per`
 * lists of r's slice [first[r], first[r] + total[r]). */
typedef struct {
    int *counts;             /* this round's lists per rank */
    uint64_t *first, *total; /* every rank's slice */
    lbk_knn_candidate *pack; /* with several rounds: one round's pieces in rank order */
    uint64_t per, rounds;
} scatter_plan;

/* The caller frees the plan (scatter_plan_free) whatever this returns. */
static lbk_status scatter_plan_make(scatter_plan *plan, int p, uint64_t nq, int k, uint64_t step)
{
    plan->counts = malloc((size_t)p * sizeof *plan->counts);
    plan->first = malloc((size_t)p * sizeof *plan->first);
    plan->total = malloc((size_t)p * sizeof *plan->total);
    plan->pack = NULL;
    plan->per = step / (uint64_t)p ? step / (uint64_t)p : 1;
    plan->rounds = 1;
    LBK_FAIL_IF(!plan->counts || !plan->first || !plan->total, LBK_ERR_NOMEM,
                "out of memory for the reduce-scatter plan (%d ranks)", p);
    uint64_t longest = 0;
    for (int r = 0; r < p; r++) {
        lbk_row_split_range(nq, p, r, &plan->first[r], &plan->total[r]);
        if (plan->total[r] > longest)
            longest = plan->total[r];
    }
    plan->rounds = longest ? (longest + plan->per - 1) / plan->per : 1;
    if (plan->rounds == 1)
        return LBK_OK;
    plan->pack = malloc((size_t)plan->per * (size_t)p * (size_t)k * sizeof *plan->pack);
    LBK_FAIL_IF(!plan->pack, LBK_ERR_NOMEM, "out of memory for a %llu-list merge buffer",
                (unsigned long long)(plan->per * (uint64_t)p));
    return LBK_OK;
}

static void scatter_plan_free(scatter_plan *plan)
{
    free(plan->pack);
    free(plan->total);
    free(plan->first);
    free(plan->counts);
}

/* Round j's counts, and what it sends: the caller's buffer when one round
 * does it all, else the round's pieces packed in rank order, as MPI expects. */
static const lbk_knn_candidate *
scatter_round(scatter_plan *plan, int p, const lbk_knn_candidate *local, size_t list, uint64_t j)
{
    const uint64_t done = j * plan->per;
    size_t packed = 0;
    for (int r = 0; r < p; r++) {
        uint64_t n = plan->total[r] > done ? plan->total[r] - done : 0;
        if (n > plan->per)
            n = plan->per;
        plan->counts[r] = (int)n;
        if (plan->pack && n)
            memcpy(plan->pack + packed * list, local + (size_t)(plan->first[r] + done) * list,
                   (size_t)n * list * sizeof *plan->pack);
        packed += (size_t)n;
    }
    return plan->pack ? plan->pack : local;
}

static lbk_status merge_reduce_scatter(const lbk_comm *comm, const lbk_knn_candidate *local,
                                       uint64_t nq, int k, lbk_knn_candidate *out,
                                       MPI_Datatype type, MPI_Op op, uint64_t step)
{
    scatter_plan plan;
    const size_t list = (size_t)k;
    lbk_status st = scatter_plan_make(&plan, comm->size, nq, k, step);
    /* A rank that could not allocate its plan must not leave the others
     * waiting in MPI_Reduce_scatter: every rank learns of it first. */
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    for (uint64_t j = 0; j < plan.rounds; j++) {
        const lbk_knn_candidate *send = scatter_round(&plan, comm->size, local, list, j);
        LBK_TRY_GOTO(
            st, lbk_comm_mpi_check(MPI_Reduce_scatter(send, out + (size_t)(j * plan.per) * list,
                                                      plan.counts, type, op, LBK_COMM_MPI(comm)),
                                   "MPI_Reduce_scatter (candidate merge)"));
    }

cleanup:
    scatter_plan_free(&plan);
    return st;
}

/* One MPI element per K-list, and the operator that merges two of them. The
 * caller frees whichever of *type and *op is no longer null. */
static lbk_status list_type_create(uint64_t list_bytes, MPI_Datatype *type, MPI_Op *op)
{
    LBK_TRY(lbk_comm_mpi_check(MPI_Type_contiguous((int)list_bytes, MPI_BYTE, type),
                               "MPI_Type_contiguous"));
    LBK_TRY(lbk_comm_mpi_check(MPI_Type_commit(type), "MPI_Type_commit"));
    return lbk_comm_mpi_check(MPI_Op_create(merge_op, 1, op), "MPI_Op_create");
}

lbk_status lbk_merge_candidates(const lbk_comm *comm, lbk_merge_mode mode,
                                const lbk_knn_candidate *local, uint64_t nq, int k,
                                lbk_knn_candidate *out, uint64_t *slice_first,
                                uint64_t *slice_count, uint64_t *bytes_moved)
{
    lbk_status st = LBK_OK;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    const uint64_t list_bytes = (uint64_t)k * sizeof(lbk_knn_candidate);
    *bytes_moved = 0;
    *slice_first = 0;
    *slice_count = 0;
    LBK_FAIL_IF(k < 1 || k > LBK_K_MAX, LBK_ERR_INTERNAL,
                "merge of %d-candidate lists: K must be in [1, %d]", k, LBK_K_MAX);
    if (mode == LBK_MERGE_REDUCE_SCATTER)
        lbk_row_split_range(nq, comm->size, comm->rank, slice_first, slice_count);
    else if (comm->rank == 0)
        *slice_count = nq;
    if (comm->size == 1) {
        memcpy(out, local, (size_t)nq * (size_t)list_bytes);
        return LBK_OK;
    }

    /* Lists per MPI call: within the chunk limit, and a count MPI can hold. */
    uint64_t step = lbk_comm_chunk_bytes() / list_bytes;
    step = step < 1 ? 1 : step > INT_MAX ? INT_MAX : step;
    LBK_TRY_GOTO(st, list_type_create(list_bytes, &type, &op));
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
