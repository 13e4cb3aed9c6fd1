#include "targets.h"

#include "alloc_large.h"
#include "log.h"
#include "row_split.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

static bool is_pad(uint64_t id) { return id == UINT64_MAX; }

lbk_status lbk_targets_init(lbk_targets *t, const lbk_comm *comm, const double *values,
                            uint64_t first, uint64_t rows, uint64_t points,
                            const uint64_t *starts, bool local)
{
    *t = (lbk_targets){.comm = comm,
                       .values = values,
                       .first = first,
                       .rows = rows,
                       .local = local || comm->size == 1};
    const size_t p = (size_t)comm->size;
    lbk_status st = LBK_OK;
    if (!t->local) {
        t->starts = malloc((p + 1) * sizeof *t->starts);
        t->counts = calloc(4 * p, sizeof *t->counts);
        if (!t->starts || !t->counts) {
            lbk_error("out of host memory for the target lookup (%d ranks)", comm->size);
            st = LBK_ERR_NOMEM;
        }
    }
    if (st == LBK_OK && !t->local)
        lbk_row_split_starts(points, comm->size, starts, t->starts);
    return st;
}

void lbk_targets_free(lbk_targets *t)
{
    free(t->starts);
    free(t->counts);
    lbk_exchange_buffer_free(&t->send);
    lbk_exchange_buffer_free(&t->recv);
    lbk_exchange_buffer_free(&t->back);
    memset(t, 0, sizeof *t);
}

static uint64_t holder_of(const lbk_targets *t, uint64_t id)
{
    return (uint64_t)lbk_row_split_find(t->starts, t->comm->size, id);
}

static uint64_t id_at(const lbk_knn_candidate *lists, int stride, int k, uint64_t slot)
{
    return lists[slot / (uint64_t)k * (uint64_t)stride + slot % (uint64_t)k].id;
}

/* The target of row `id`, which this rank must hold. */
static lbk_status target_of(const lbk_targets *t, uint64_t id, double *out)
{
    LBK_FAIL_IF(id < t->first || id - t->first >= t->rows, LBK_ERR_INTERNAL,
                "target lookup: row %llu is not among this rank's %llu", (unsigned long long)id,
                (unsigned long long)t->rows);
    *out = t->values[id - t->first];
    return LBK_OK;
}

static lbk_status lookup_local(const lbk_targets *t, const lbk_knn_candidate *lists, int stride,
                               int k, uint64_t slots, double *out)
{
    for (uint64_t i = 0; i < slots; i++) {
        const uint64_t id = id_at(lists, stride, k, i);
        out[i] = 0.0;
        if (!is_pad(id))
            LBK_TRY(target_of(t, id, &out[i]));
    }
    return LBK_OK;
}

/* The ids, grouped by holder in slot order: counts[r] of them for rank r. */
static lbk_status pack_ids(lbk_targets *t, const lbk_knn_candidate *lists, int stride, int k,
                           uint64_t slots, uint64_t *counts, lbk_status prep)
{
    const uint64_t p = (uint64_t)t->comm->size;
    memset(counts, 0, (size_t)p * sizeof *counts);
    LBK_TRY(prep);
    for (uint64_t i = 0; i < slots; i++)
        if (!is_pad(id_at(lists, stride, k, i)))
            counts[holder_of(t, id_at(lists, stride, k, i))]++;
    LBK_TRY(lbk_exchange_buffer_reserve(&t->send, (size_t)slots * sizeof(uint64_t),
                                        "target lookups"));
    uint64_t *ids = t->send.data, *cursor = t->counts + 3 * p;
    for (uint64_t r = 0, sum = 0; r < p; sum += counts[r], r++)
        cursor[r] = sum;
    for (uint64_t i = 0; i < slots; i++) {
        const uint64_t id = id_at(lists, stride, k, i);
        if (!is_pad(id))
            ids[cursor[holder_of(t, id)]++] = id;
    }
    return LBK_OK;
}

/* In place: each received id becomes its target (both 8 bytes). */
static lbk_status answer(lbk_targets *t, uint64_t count)
{
    unsigned char *rows = t->recv.data;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t id;
        memcpy(&id, rows + i * sizeof id, sizeof id);
        double v;
        LBK_TRY(target_of(t, id, &v));
        memcpy(rows + i * sizeof v, &v, sizeof v);
    }
    return LBK_OK;
}

/* The answers, in the order the ids went out, back to their slots. */
static void unpack(lbk_targets *t, const lbk_knn_candidate *lists, int stride, int k,
                   uint64_t slots, const uint64_t *counts, double *out)
{
    const uint64_t p = (uint64_t)t->comm->size;
    const double *got = t->back.data;
    uint64_t *cursor = t->counts + 3 * p;
    for (uint64_t r = 0, sum = 0; r < p; sum += counts[r], r++)
        cursor[r] = sum;
    for (uint64_t i = 0; i < slots; i++) {
        const uint64_t id = id_at(lists, stride, k, i);
        out[i] = is_pad(id) ? 0.0 : got[cursor[holder_of(t, id)]++];
    }
}

lbk_status lbk_targets_lookup(lbk_targets *t, const lbk_knn_candidate *lists, uint64_t count,
                              int stride, int k, double *out, lbk_status prep)
{
    const uint64_t slots = count * (uint64_t)k;
    if (t->local)
        return prep == LBK_OK ? lookup_local(t, lists, stride, k, slots, out) : prep;
    const uint64_t p = (uint64_t)t->comm->size;
    uint64_t *sent = t->counts, *received = t->counts + p, *answered = t->counts + 2 * p;
    uint64_t bytes = 0, total = 0;
    lbk_status st = pack_ids(t, lists, stride, k, slots, sent, prep);
    LBK_TRY(lbk_exchange_rows(t->comm, st, t->send.data, sent, sizeof(uint64_t), &t->recv,
                              received, &bytes));
    for (uint64_t r = 0; r < p; r++)
        total += received[r];
    st = answer(t, total);
    /* The answers go back as the questions came: received[r] to rank r. */
    LBK_TRY(lbk_exchange_rows(t->comm, st, t->recv.data, received, sizeof(double), &t->back,
                              answered, &bytes));
    unpack(t, lists, stride, k, slots, sent, out);
    return LBK_OK;
}
