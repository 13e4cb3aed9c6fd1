/* Sparse all-to-all exchanges of fixed-size rows (MPI_Alltoallv underneath):
 * the spatial partition moves reference points to their owners, queries to
 * the ranks that search them and K-lists back to the queries' owners with
 * this one call. Counts are 64-bit; calls are split into rounds so that no
 * MPI count or displacement exceeds the chunk limit (comm.h). */
#ifndef LBK_EXCHANGE_H
#define LBK_EXCHANGE_H

#include "comm.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A grow-only host buffer, reused from batch to batch; or (borrowed) the
 * caller's memory of a fixed size, which an exchange fills in place. */
typedef struct {
    void *data;
    size_t capacity; /* bytes */
    bool borrowed;   /* never grown nor freed here */
    /* From 4 MiB on, on huge pages (alloc_large.h); else plain pages. */
    bool huge_pages;
} lbk_exchange_buffer;

/* At least `bytes` bytes (contents not kept when it grows); logs `what`
 * when out of memory, or (borrowed) when it is too small: an internal
 * error. */
lbk_status lbk_exchange_buffer_reserve(lbk_exchange_buffer *buffer, size_t bytes,
                                       const char *what);
void lbk_exchange_buffer_free(lbk_exchange_buffer *buffer);

/* Collective. `prep` is this rank's status so far (its packing): every rank
 * agrees on it before any data moves, and again once every receive buffer
 * is allocated, so a rank that failed stops every rank with one message.
 * `send` holds send_counts[0] rows for rank 0, then send_counts[1] rows for
 * rank 1, ...; each row is row_bytes bytes. The received rows land in
 * `recv` (grown as needed) in source-rank order, recv_counts[r] from rank r
 * (a ranks-long array the caller provides). *bytes_sent grows by the bytes
 * this rank sent to other ranks. */
lbk_status lbk_exchange_rows(const lbk_comm *comm, lbk_status prep, const void *send,
                             const uint64_t *send_counts, size_t row_bytes,
                             lbk_exchange_buffer *recv, uint64_t *recv_counts,
                             uint64_t *bytes_sent);

/* lbk_exchange_rows, except that this rank's own rows are already in place:
 * `send` holds no rows for this rank (send_counts[rank] of them are counted
 * but skipped), and recv already holds them where they would land, which
 * the exchange leaves as they are. recv must be large enough for every row
 * (a borrowed buffer: it is not grown, since growing would lose them). */
lbk_status lbk_exchange_rows_own_placed(const lbk_comm *comm, const void *send,
                                        const uint64_t *send_counts, size_t row_bytes,
                                        lbk_exchange_buffer *recv, uint64_t *recv_counts,
                                        uint64_t *bytes_sent);

#endif
