/* Task regress: the neighbours' targets, by global id, from the rank that
 * read them. Each rank reads the targets of the reference rows it reads
 * ([r*N/P, (r+1)*N/P)), and they stay there: the final K-lists carry
 * global ids, so a target need not travel with its point through the
 * spatial partition's redistribution, nor be held by every rank (8 N bytes
 * each). Per batch, the ids of a rank's final lists go to their readers
 * and the targets come back: two exchanges of 8 bytes per neighbour
 * (docs/design.md section 12). */
#include "run_state.h"

#include "alloc_large.h"
#include "log.h"
#include "try.h"

#include <string.h>

/* The rank that read row `id` of n rows over p ranks: the r with
 * n*r/p <= id < n*(r+1)/p (read_inputs' shards). */
static uint64_t reader_of(uint64_t id, uint64_t n, uint64_t p)
{
    uint64_t r = (uint64_t)((double)id / (double)n * (double)p);
    r = r >= p ? p - 1 : r;
    while (r > 0 && n * r / p > id)
        r--;
    while (r + 1 < p && n * (r + 1) / p <= id)
        r++;
    return r;
}

static bool is_pad(uint64_t id) { return id == UINT64_MAX; }

/* Replicated (or one rank): every target is here. */
static void lookup_local(const lbk_run_state *s, const lbk_index_slice *b, double *out)
{
    const uint64_t slots = b->slice_count * (uint64_t)b->k;
    for (uint64_t i = 0; i < slots; i++)
        out[i] = is_pad(b->lists[i].id) ? 0.0 : s->targets[b->lists[i].id - s->targets_first];
}

/* The slice's ids, grouped by reader in slot order: counts[r] of them for
 * rank r. */
static lbk_status pack_ids(lbk_run_state *s, const lbk_index_slice *b, uint64_t *counts,
                           lbk_status prep)
{
    const uint64_t n = s->shape.reference_rows, p = (uint64_t)s->comm->size;
    const uint64_t slots = b->slice_count * (uint64_t)b->k;
    memset(counts, 0, (size_t)p * sizeof *counts);
    LBK_TRY(prep);
    for (uint64_t i = 0; i < slots; i++)
        if (!is_pad(b->lists[i].id))
            counts[reader_of(b->lists[i].id, n, p)]++;
    LBK_TRY(lbk_exchange_buffer_reserve(&s->lookup_send, (size_t)slots * sizeof(uint64_t),
                                        "target lookups"));
    uint64_t *ids = s->lookup_send.data, *cursor = s->lookup_counts + 3 * p;
    for (uint64_t r = 0, sum = 0; r < p; sum += counts[r], r++)
        cursor[r] = sum;
    for (uint64_t i = 0; i < slots; i++)
        if (!is_pad(b->lists[i].id))
            ids[cursor[reader_of(b->lists[i].id, n, p)]++] = b->lists[i].id;
    return LBK_OK;
}

/* In place: each received id becomes its target (both 8 bytes). */
static lbk_status answer(lbk_run_state *s, uint64_t count, lbk_status prep)
{
    LBK_TRY(prep);
    unsigned char *rows = s->lookup_recv.data;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t id;
        memcpy(&id, rows + i * sizeof id, sizeof id);
        LBK_FAIL_IF(id < s->targets_first || id - s->targets_first >= s->targets_rows,
                    LBK_ERR_INTERNAL, "target lookup: row %llu is not among this rank's %llu",
                    (unsigned long long)id, (unsigned long long)s->targets_rows);
        const double t = s->targets[id - s->targets_first];
        memcpy(rows + i * sizeof t, &t, sizeof t);
    }
    return LBK_OK;
}

/* The answers, in the order the ids went out, back to their slots. */
static void unpack(lbk_run_state *s, const lbk_index_slice *b, const uint64_t *counts,
                   double *out)
{
    const uint64_t n = s->shape.reference_rows, p = (uint64_t)s->comm->size;
    const uint64_t slots = b->slice_count * (uint64_t)b->k;
    const double *got = s->lookup_back.data;
    uint64_t *cursor = s->lookup_counts + 3 * p;
    for (uint64_t r = 0, sum = 0; r < p; sum += counts[r], r++)
        cursor[r] = sum;
    for (uint64_t i = 0; i < slots; i++)
        out[i] = is_pad(b->lists[i].id) ? 0.0 : got[cursor[reader_of(b->lists[i].id, n, p)]++];
}

lbk_status lbk_run_targets_lookup(lbk_run_state *s, const lbk_index_slice *b, double *out,
                                  lbk_status prep)
{
    if (s->plan.replicated || s->comm->size == 1) {
        if (prep == LBK_OK)
            lookup_local(s, b, out);
        return prep;
    }
    const uint64_t p = (uint64_t)s->comm->size;
    uint64_t *sent = s->lookup_counts, *received = s->lookup_counts + p;
    uint64_t bytes = 0, total = 0;
    lbk_status st = pack_ids(s, b, sent, prep);
    LBK_TRY(lbk_exchange_rows(s->comm, st, s->lookup_send.data, sent, sizeof(uint64_t),
                              &s->lookup_recv, received, &bytes));
    for (uint64_t r = 0; r < p; r++)
        total += received[r];
    st = answer(s, total, LBK_OK);
    /* The answers go back as the questions came: received[r] to rank r. */
    uint64_t *answered = s->lookup_counts + 2 * p;
    LBK_TRY(lbk_exchange_rows(s->comm, st, s->lookup_recv.data, received, sizeof(double),
                              &s->lookup_back, answered, &bytes));
    unpack(s, b, sent, out);
    return LBK_OK;
}

void lbk_run_targets_free(lbk_run_state *s)
{
    lbk_alloc_large_free(s->targets);
    lbk_alloc_large_free(s->query_targets);
    lbk_alloc_large_free(s->values);
    lbk_alloc_large_free(s->batch_truth_values);
    lbk_alloc_large_free(s->neighbour_targets);
    lbk_alloc_large_free(s->lookup_counts);
    lbk_exchange_buffer_free(&s->lookup_send);
    lbk_exchange_buffer_free(&s->lookup_recv);
    lbk_exchange_buffer_free(&s->lookup_back);
}
