/* The K-list merge across ranks: a user-defined commutative MPI_Op that
 * merges whole K-lists, under MPI_Reduce (rank 0 gets every list) or
 * MPI_Reduce_scatter (each rank gets a contiguous slice), and the slice rule
 * shared with the run driver. */
#ifndef LBK_MERGE_H
#define LBK_MERGE_H

#include "comm.h"
#include "enums.h"
#include "knn.h"
#include "status.h"

#include <stdint.h>

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
                                const lbk_knn_candidate *local, uint64_t nq, int k,
                                lbk_knn_candidate *out, uint64_t *slice_first,
                                uint64_t *slice_count, uint64_t *bytes_moved);

#endif
