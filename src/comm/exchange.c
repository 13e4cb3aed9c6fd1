/* Sparse all-to-all of fixed-size rows: counts by MPI_Alltoall, then the
 * rows by MPI_Alltoallv in as many rounds as the chunk limit needs. */
#include "exchange.h"

#include "alloc_large.h"
#include "comm_mpi.h"
#include "log.h"
#include "try.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

lbk_status lbk_exchange_buffer_reserve(lbk_exchange_buffer *buffer, size_t bytes,
                                       const char *what)
{
    if (bytes <= buffer->capacity && buffer->data)
        return LBK_OK;
    LBK_FAIL_IF(buffer->borrowed, LBK_ERR_INTERNAL,
                "internal: %s: %zu bytes do not fit a buffer of %zu", what, bytes,
                buffer->capacity);
    /* Exactly what is asked: a buffer may become a data set's array. Plain
     * pages unless the owner asks: the graph's row buffers, grown batch by
     * batch, held 14-31 MiB more at the peak on huge pages (1e7 points, P = 2),
     * while the K-lists a rank computes for others, touched once per batch,
     * cost a quarter of a P = 2 query phase on 4 KiB pages (bench/RESULTS.md,
     * run AB). */
    const size_t want = bytes < 64 ? 64 : bytes;
    lbk_alloc_large_free(buffer->data);
    buffer->data = buffer->huge_pages ? lbk_alloc_large(want) : malloc(want);
    buffer->capacity = buffer->data ? want : 0;
    LBK_FAIL_IF(!buffer->data, LBK_ERR_NOMEM, "out of host memory for %s (%zu bytes)", what,
                want);
    return LBK_OK;
}

void lbk_exchange_buffer_free(lbk_exchange_buffer *buffer)
{
    if (!buffer->borrowed)
        lbk_alloc_large_free(buffer->data);
    buffer->data = NULL;
    buffer->capacity = 0;
}

/* One exchange's plan: rows per rank and round, and the staging buffers of
 * a multi-round exchange. */
typedef struct {
    int p;
    int skip; /* the rank whose rows stay out of the exchange, or -1 */
    size_t row;
    uint64_t per, rounds;                   /* rows per rank pair and round, and rounds */
    uint64_t *send_first, *recv_first;      /* each rank's first row in send / recv */
    int *scount, *sdispl, *rcount, *rdispl; /* one round's, in bytes */
    unsigned char *stage_send, *stage_recv; /* only with more than one round */
} plan;

static void plan_free(plan *pl)
{
    free(pl->send_first);
    free(pl->recv_first);
    free(pl->scount);
    free(pl->sdispl);
    free(pl->rcount);
    free(pl->rdispl);
    free(pl->stage_send);
    free(pl->stage_recv);
}

/* The plan's arrays; rounds from the largest count any pair exchanges. */
static lbk_status plan_make(plan *pl, int p, int skip, size_t row, const uint64_t *send_counts,
                            const uint64_t *recv_counts, uint64_t largest)
{
    const uint64_t limit =
        lbk_comm_chunk_bytes() < (uint64_t)INT_MAX ? lbk_comm_chunk_bytes() : (uint64_t)INT_MAX;
    /* A round moves at most `per` rows between any two ranks, so at most
     * p * per rows leave (or reach) a rank: within the limit, or one row per
     * rank when even that exceeds it (never beyond what an int counts). */
    LBK_FAIL_IF((uint64_t)p * row > (uint64_t)INT_MAX, LBK_ERR_INTERNAL,
                "exchange: %d ranks x %zu-byte rows exceed one MPI call", p, row);
    pl->p = p;
    pl->skip = skip;
    pl->row = row;
    pl->per = limit / ((uint64_t)p * row) ? limit / ((uint64_t)p * row) : 1;
    pl->rounds = largest ? (largest + pl->per - 1) / pl->per : 1;
    pl->send_first = malloc((size_t)p * sizeof *pl->send_first);
    pl->recv_first = malloc((size_t)p * sizeof *pl->recv_first);
    pl->scount = malloc((size_t)p * sizeof(int));
    pl->sdispl = malloc((size_t)p * sizeof(int));
    pl->rcount = malloc((size_t)p * sizeof(int));
    pl->rdispl = malloc((size_t)p * sizeof(int));
    LBK_FAIL_IF(!pl->send_first || !pl->recv_first || !pl->scount || !pl->sdispl || !pl->rcount ||
                    !pl->rdispl,
                LBK_ERR_NOMEM, "out of host memory for an exchange plan (%d ranks)", p);
    uint64_t s = 0, r = 0;
    for (int i = 0; i < p; i++) {
        pl->send_first[i] = s;
        pl->recv_first[i] = r;
        s += i == skip ? 0 : send_counts[i];
        r += recv_counts[i];
    }
    if (pl->rounds == 1)
        return LBK_OK;
    pl->stage_send = malloc((size_t)(pl->per * (uint64_t)p) * row);
    pl->stage_recv = malloc((size_t)(pl->per * (uint64_t)p) * row);
    LBK_FAIL_IF(!pl->stage_send || !pl->stage_recv, LBK_ERR_NOMEM,
                "out of host memory for exchange staging (%llu rows)",
                (unsigned long long)(pl->per * (uint64_t)p));
    return LBK_OK;
}

/* Rows of round j between this rank and rank i: [j*per, j*per + n). */
static uint64_t round_rows(const plan *pl, uint64_t count, uint64_t j)
{
    const uint64_t done = j * pl->per;
    const uint64_t left = count > done ? count - done : 0;
    return left < pl->per ? left : pl->per;
}

/* Round j: pack what goes out (staged rounds), move it, unpack what came. */
static lbk_status plan_round(const lbk_comm *comm, plan *pl, const unsigned char *send,
                             const uint64_t *send_counts, unsigned char *recv,
                             const uint64_t *recv_counts, uint64_t j)
{
    const bool staged = pl->rounds > 1;
    uint64_t s = 0, r = 0;
    for (int i = 0; i < pl->p; i++) {
        const bool skipped = i == pl->skip;
        const uint64_t ns = skipped ? 0 : round_rows(pl, send_counts[i], j);
        const uint64_t nr = skipped ? 0 : round_rows(pl, recv_counts[i], j);
        const uint64_t sat = staged ? s : pl->send_first[i], rat = staged ? r : pl->recv_first[i];
        if (staged && ns)
            memcpy(pl->stage_send + s * pl->row,
                   send + (pl->send_first[i] + j * pl->per) * pl->row, (size_t)ns * pl->row);
        pl->scount[i] = (int)(ns * pl->row);
        pl->sdispl[i] = (int)(sat * pl->row);
        pl->rcount[i] = (int)(nr * pl->row);
        pl->rdispl[i] = (int)(rat * pl->row);
        s += ns;
        r += nr;
    }
    LBK_TRY(
        lbk_comm_mpi_check(MPI_Alltoallv(staged ? pl->stage_send : send, pl->scount, pl->sdispl,
                                         MPI_BYTE, staged ? pl->stage_recv : recv, pl->rcount,
                                         pl->rdispl, MPI_BYTE, LBK_COMM_MPI(comm)),
                           "MPI_Alltoallv (exchange)"));
    for (int i = 0; staged && i < pl->p; i++)
        if (pl->rcount[i])
            memcpy(recv + (pl->recv_first[i] + j * pl->per) * pl->row,
                   pl->stage_recv + (size_t)pl->rdispl[i], (size_t)pl->rcount[i]);
    return LBK_OK;
}

/* One rank: its rows to itself, copied unless they are in place already. */
static lbk_status exchange_one_rank(bool own_placed, const void *send,
                                    const uint64_t *send_counts, size_t row_bytes,
                                    lbk_exchange_buffer *recv, uint64_t *recv_counts)
{
    recv_counts[0] = send_counts[0];
    LBK_TRY(
        lbk_exchange_buffer_reserve(recv, (size_t)send_counts[0] * row_bytes, "received rows"));
    if (send_counts[0] && !own_placed)
        memcpy(recv->data, send, (size_t)send_counts[0] * row_bytes);
    return LBK_OK;
}

static lbk_status exchange(const lbk_comm *comm, lbk_status prep, bool own_placed,
                           const void *send, const uint64_t *send_counts, size_t row_bytes,
                           lbk_exchange_buffer *recv, uint64_t *recv_counts, uint64_t *bytes_sent)
{
    const int p = comm->size;
    memset(recv_counts, 0, (size_t)p * sizeof *recv_counts);
    if (p == 1)
        return prep != LBK_OK ? prep
                              : exchange_one_rank(own_placed, send, send_counts, row_bytes, recv,
                                                  recv_counts);
    LBK_TRY(lbk_comm_agree(comm, prep));
    LBK_TRY(lbk_comm_mpi_check(MPI_Alltoall(send_counts, 1, MPI_UINT64_T, recv_counts, 1,
                                            MPI_UINT64_T, LBK_COMM_MPI(comm)),
                               "MPI_Alltoall (exchange counts)"));
    uint64_t total = 0, largest = 0;
    for (int i = 0; i < p; i++) {
        total += recv_counts[i];
        largest = send_counts[i] > largest ? send_counts[i] : largest;
        largest = recv_counts[i] > largest ? recv_counts[i] : largest;
        if (i != comm->rank)
            *bytes_sent += send_counts[i] * (uint64_t)row_bytes;
    }
    LBK_TRY(lbk_comm_allreduce_u64(comm, &largest, LBK_REDUCE_MAX));
    plan pl;
    memset(&pl, 0, sizeof pl);
    lbk_status st = plan_make(&pl, p, own_placed ? comm->rank : -1, row_bytes, send_counts,
                              recv_counts, largest);
    if (st == LBK_OK)
        st = lbk_exchange_buffer_reserve(recv, (size_t)total * row_bytes, "received rows");
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    for (uint64_t j = 0; j < pl.rounds; j++)
        LBK_TRY_GOTO(st, plan_round(comm, &pl, send, send_counts, recv->data, recv_counts, j));
cleanup:
    plan_free(&pl);
    return st;
}

lbk_status lbk_exchange_rows(const lbk_comm *comm, lbk_status prep, const void *send,
                             const uint64_t *send_counts, size_t row_bytes,
                             lbk_exchange_buffer *recv, uint64_t *recv_counts,
                             uint64_t *bytes_sent)
{
    return exchange(comm, prep, false, send, send_counts, row_bytes, recv, recv_counts,
                    bytes_sent);
}

lbk_status lbk_exchange_rows_own_placed(const lbk_comm *comm, const void *send,
                                        const uint64_t *send_counts, size_t row_bytes,
                                        lbk_exchange_buffer *recv, uint64_t *recv_counts,
                                        uint64_t *bytes_sent)
{
    LBK_FAIL_IF(
        !recv->borrowed, LBK_ERR_INTERNAL,
        "internal: an exchange that keeps this rank's rows in place needs a fixed buffer");
    return exchange(comm, LBK_OK, true, send, send_counts, row_bytes, recv, recv_counts,
                    bytes_sent);
}
