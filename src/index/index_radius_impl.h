/* The radius search's run (index_radius.c and its parts): the state of one
 * search shared by the steps that live in
 *   index_radius.c        the search: batches, the owned queries, the budget;
 *   index_radius_route.c  the work rows to their holders, counts and rounds
 *                         between owners and holders;
 *   index_radius_count.c  the holders' counts, the kept counts, the rounds;
 *   index_radius_fill.c   a holder's lists of one round, as entries;
 *   index_radius_merge.c  an owner's entries of one round sorted per query,
 *                         to the sink.
 * Private to those files. */
#ifndef LBK_INDEX_RADIUS_IMPL_H
#define LBK_INDEX_RADIUS_IMPL_H

#include "batch_impl.h"

#include <stdbool.h>
#include <stdint.h>

/* One neighbour on its way back to its query's owner: `pos` is the work
 * row's place among the rows its owner sent this rank; the label travels
 * with it, as a K-list candidate's does (-1 without labels). */
typedef struct {
    float key;
    uint32_t pos;
    int32_t label;
    uint32_t unused; /* zero: the entries' bytes are all defined */
    uint64_t id;
} lbk_index_radius_entry;
_Static_assert(sizeof(lbk_index_radius_entry) == 24,
               "lbk_index_radius_entry is sent as 24 bytes");

enum {
    OWN_BOUND,   /* owner: each owned query's key bound (float) */
    OWN_ROW,     /* owner: each owned query's global row (uint64_t) */
    OWN_COUNT,   /* owner: the counts summed over the holders (uint64_t) */
    OWN_RECV,    /* owner: the entries the holders send (each at most `keep`) */
    OWN_ROUND,   /* owner: each owned query's fill round (uint32_t) */
    SENT_QUERY,  /* owner: the owned query of each row sent, packed by rank (uint32_t) */
    SEND,        /* rows out: work rows, rounds */
    BACK,        /* counts back (uint64_t) */
    WORK,        /* holder: the work rows received (point, bound) */
    WORK_BOUND,  /* holder: each work row's bound (float) */
    WORK_COUNT,  /* holder: each work row's count here (uint64_t) */
    WORK_ROUND,  /* holder: each work row's round (uint32_t) */
    SEL_POINTS,  /* holder: one round's work rows */
    SEL_BOUND,   /* holder */
    SEL_POS,     /* holder: their places (uint32_t) */
    SEL_OFFSETS, /* holder: uint64_t, n + 1 */
    FILL_KEYS,   /* holder: the engine's lists */
    FILL_ROWS,
    CHUNK_OFFSETS,
    ENTRIES_OUT,
    ENTRIES_IN,
    PLACED,     /* owner: a round's entries by query */
    OUT_COUNTS, /* owner: the sink's arrays */
    OUT_INDPTR,
    OUT_IDS,
    OUT_KEYS,
    OUT_LABELS,
    BUFFERS
};

typedef struct {
    lbk_index *s;
    const lbk_index_radius_params *p;
    const lbk_index_radius_sink *sink;
    bool self, spatial;
    uint64_t budget; /* entries a rank may hold */
    uint64_t limit;  /* entries of one owner's round */
    uint64_t keep;   /* the most entries a holder sends of one list (0: all):
                      * the cap, plus one for the point itself (self search) */
    lbk_batch b;
    uint64_t own_n;      /* owned queries: batch rows b.slice_first, ... */
    const float *work;   /* holder: n_work points */
    uint64_t n_work;     /* holder */
    uint64_t own_rounds; /* owner: rounds of this batch */
    bool bound_known;    /* lbk_index_radius_bound's last radius (its bits) and bound */
    uint32_t bound_radius;
    float bound;
    uint64_t *send_counts, *recv_counts, *back_counts, *send_start, *recv_start, *out_counts,
        *in_counts; /* per rank each */
    lbk_exchange_buffer buf[BUFFERS];
} lbk_index_radius_run;

/* Buffer `which` of run r as an array of `type`. */
#define LBK_INDEX_RADIUS_AT(r, which, type) ((type *)(r)->buf[which].data)

/* index_radius.c: the owned queries' entries to receive (own_recv), a
 * buffer grown to `bytes`, batch row j's global row, a row's key bound,
 * per-rank starts and totals, the engine's largest call and its work. */
uint64_t *lbk_index_radius_own_recv(const lbk_index_radius_run *r);
lbk_status lbk_index_radius_reserve(lbk_index_radius_run *r, int which, uint64_t bytes,
                                    const char *what);
uint64_t lbk_index_radius_batch_row(const lbk_index_radius_run *r, uint64_t j);
float lbk_index_radius_bound(lbk_index_radius_run *r, uint64_t row);
void lbk_index_radius_starts(const uint64_t *counts, int p, uint64_t *start);
uint64_t lbk_index_radius_total(const uint64_t *counts, int p);
uint64_t lbk_index_radius_engine_chunk(const lbk_index_radius_run *r);
void lbk_index_radius_engine_work(lbk_index *s);
/* index_radius_route.c, collective each: the work rows to their holders
 * (agreed), their counts back to the owners, their rounds out. */
lbk_status lbk_index_radius_route(lbk_index_radius_run *r);
lbk_status lbk_index_radius_counts_back(lbk_index_radius_run *r);
lbk_status lbk_index_radius_rounds_out(lbk_index_radius_run *r);
/* index_radius_count.c: the holder's counts; owned query i's exact count;
 * the rounds (owner); collective: a count-only batch to the sink. */
lbk_status lbk_index_radius_count(lbk_index_radius_run *r);
uint64_t lbk_index_radius_exact_count(const lbk_index_radius_run *r, uint64_t i);
lbk_status lbk_index_radius_plan_rounds(lbk_index_radius_run *r);
lbk_status lbk_index_radius_emit_counts(lbk_index_radius_run *r);
/* index_radius_fill.c: the holder's entries of one round. */
lbk_status lbk_index_radius_fill_round(lbk_index_radius_run *r, uint32_t round);
/* index_radius_merge.c, collective: one round of the fill, holders to
 * owners to sinks. */
lbk_status lbk_index_radius_run_round(lbk_index_radius_run *r, uint32_t round);

#endif
