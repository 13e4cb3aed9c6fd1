/* The sparse row exchange under mpirun -n P (src/comm/exchange.h): rank s
 * sends rank d count(s, d) rows (zero for some pairs), each row naming its
 * source, destination and index, so every rank can check each row it got,
 * and where, against positions worked out here: the rows from rank s start
 * after those of the ranks below s. Chunked cases cut the exchange into
 * rounds of a few rows (the staged path). The own-placed exchange leaves a
 * rank's own rows out of the send buffer and keeps what its receive buffer
 * holds at their place. */
#include "comm.h"
#include "exchange.h"
#include "lbk_test.h"
#include "lbk_test_mpi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static lbk_comm comm;

typedef struct {
    uint32_t from, to, index;
} row;

/* Rows rank `from` sends rank `to`: 0-3, a pure function of the pair. */
static uint64_t count(int from, int to) { return (uint64_t)((3 * from + 5 * to + 1) % 4); }

/* A row's bytes where the own-placed exchange must not write. */
static row placed_row(uint64_t i) { return (row){0xFFFFFFFFu, (uint32_t)comm.rank, (uint32_t)i}; }

/* What this rank sends, packed by destination; its own rows left out when
 * `own_placed`. */
static row *pack(const uint64_t *send_counts, bool own_placed)
{
    uint64_t n = 0;
    for (int d = 0; d < comm.size; d++)
        n += own_placed && d == comm.rank ? 0 : send_counts[d];
    row *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    LBK_ASSERT_TRUE(out != NULL, "out of memory for %llu rows", (unsigned long long)n);
    uint64_t at = 0;
    for (int d = 0; d < comm.size; d++)
        for (uint64_t i = 0; i < send_counts[d] && !(own_placed && d == comm.rank); i++)
            out[at++] = (row){(uint32_t)comm.rank, (uint32_t)d, (uint32_t)i};
    return out;
}

static void check_exchange(bool own_placed, uint64_t chunk_bytes)
{
    const int p = comm.size, me = comm.rank;
    uint64_t *send_counts = calloc((size_t)p, sizeof *send_counts);
    uint64_t *recv_counts = calloc((size_t)p, sizeof *recv_counts);
    LBK_ASSERT_TRUE(send_counts && recv_counts, "out of memory for %d ranks' counts", p);
    uint64_t total = 0, own_first = 0, sent_bytes = 0;
    for (int s = 0; s < p; s++) {
        send_counts[s] = count(me, s);
        own_first += s < me ? count(s, me) : 0;
        total += count(s, me);
        sent_bytes += s == me ? 0 : count(me, s) * sizeof(row);
    }
    row *send = pack(send_counts, own_placed);
    row *fixed = calloc((size_t)(total ? total : 1), sizeof *fixed);
    LBK_ASSERT_TRUE(fixed != NULL, "out of memory for %llu rows", (unsigned long long)total);
    for (uint64_t i = 0; i < count(me, me); i++)
        fixed[own_first + i] = placed_row(i);
    lbk_exchange_buffer recv = {.data = fixed, .capacity = (size_t)total * sizeof(row)};
    recv.borrowed = own_placed;
    lbk_exchange_buffer grown = {0};
    uint64_t bytes = 0;
    lbk_comm_set_chunk_bytes(chunk_bytes);
    const lbk_status st =
        own_placed ? lbk_exchange_rows_own_placed(&comm, send, send_counts, sizeof(row), &recv,
                                                  recv_counts, &bytes)
                   : lbk_exchange_rows(&comm, LBK_OK, send, send_counts, sizeof(row), &grown,
                                       recv_counts, &bytes);
    lbk_comm_set_chunk_bytes(0);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "exchange: %s", lbk_status_name(st));
    LBK_EXPECT_EQ_U64(bytes, sent_bytes, "bytes sent to other ranks");
    const row *got = own_placed ? recv.data : grown.data;
    uint64_t at = 0;
    for (int s = 0; s < p && st == LBK_OK; s++) {
        LBK_EXPECT_EQ_U64(recv_counts[s], count(s, me), "rows from rank %d", s);
        for (uint64_t i = 0; i < count(s, me); i++, at++) {
            const row want = own_placed && s == me
                                 ? placed_row(i)
                                 : (row){(uint32_t)s, (uint32_t)me, (uint32_t)i};
            LBK_EXPECT_EQ_MEM(&got[at], &want, sizeof want, "row %llu (from rank %d, #%llu)",
                              (unsigned long long)at, s, (unsigned long long)i);
        }
    }
    lbk_exchange_buffer_free(&grown);
    free(fixed);
    free(send);
    free(recv_counts);
    free(send_counts);
}

static void case_rows(void) { check_exchange(false, 0); }
static void case_rows_chunked(void) { check_exchange(false, 2 * sizeof(row)); }
static void case_own_placed(void) { check_exchange(true, 0); }
static void case_own_placed_chunked(void) { check_exchange(true, 2 * sizeof(row)); }

/* A buffer the exchange may grow would lose the rows placed in it: refused
 * on every rank alike, before any collective step. */
static void case_own_placed_needs_fixed_buffer(void)
{
    uint64_t *send_counts = calloc((size_t)comm.size, sizeof *send_counts);
    uint64_t *recv_counts = calloc((size_t)comm.size, sizeof *recv_counts);
    LBK_ASSERT_TRUE(send_counts && recv_counts, "out of memory for %d ranks' counts", comm.size);
    lbk_exchange_buffer recv = {0};
    uint64_t bytes = 0;
    const row none = {0, 0, 0};
    const lbk_status st = lbk_exchange_rows_own_placed(&comm, &none, send_counts, sizeof(row),
                                                       &recv, recv_counts, &bytes);
    LBK_EXPECT_EQ_INT(st, LBK_ERR_INTERNAL, "a growable buffer: %s", lbk_status_name(st));
    lbk_exchange_buffer_free(&recv);
    free(recv_counts);
    free(send_counts);
}

static const lbk_test_case cases[] = {
    {"rows", case_rows},
    {"rows_chunked", case_rows_chunked},
    {"own_placed", case_own_placed},
    {"own_placed_chunked", case_own_placed_chunked},
    {"own_placed_needs_fixed_buffer", case_own_placed_needs_fixed_buffer},
};

int main(int argc, char **argv)
{
    const lbk_test_table table[] = {LBK_TEST_CASES(cases)};
    return lbk_test_mpi_main(argc, argv, table, 1, &comm);
}
