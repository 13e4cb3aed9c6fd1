/* The radius search's fill on a holder (index_radius_impl.h): one round's
 * work rows through the engine in groups within the budget, their lists
 * as entries for their owners. */
#include "index_radius_impl.h"

#include "try.h"

#include <stdlib.h>
#include <string.h>

#define AT LBK_INDEX_RADIUS_AT

/* The holder: round `round`'s work rows gathered, with their places. */
static lbk_status select_round(lbk_index_radius_run *r, uint32_t round, uint64_t *n_sel)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim;
    const uint32_t *rounds = AT(r, WORK_ROUND, uint32_t);
    uint64_t n = 0;
    for (uint64_t w = 0; w < r->n_work; w++)
        n += rounds[w] == round;
    LBK_TRY(lbk_index_radius_reserve(r, SEL_POINTS, n * dim * sizeof(float), "radius round"));
    LBK_TRY(lbk_index_radius_reserve(r, SEL_BOUND, n * sizeof(float), "radius round"));
    LBK_TRY(lbk_index_radius_reserve(r, SEL_POS, n * sizeof(uint32_t), "radius round"));
    LBK_TRY(lbk_index_radius_reserve(r, SEL_OFFSETS, (n + 1) * sizeof(uint64_t), "radius round"));
    uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    memset(r->out_counts, 0, (size_t)p * sizeof *r->out_counts);
    offsets[0] = 0;
    int src = 0;
    uint64_t j = 0;
    for (uint64_t w = 0; w < r->n_work; w++) {
        while (src + 1 < p && w >= r->recv_start[src + 1])
            src++;
        if (rounds[w] != round)
            continue;
        memcpy(AT(r, SEL_POINTS, float) + j * dim, r->work + w * dim,
               (size_t)dim * sizeof(float));
        AT(r, SEL_BOUND, float)[j] = AT(r, WORK_BOUND, float)[w];
        AT(r, SEL_POS, uint32_t)[j] = (uint32_t)(w - r->recv_start[src]);
        const uint64_t c = AT(r, WORK_COUNT, uint64_t)[w];
        offsets[j + 1] = offsets[j] + c;
        r->out_counts[src] += r->keep && c > r->keep ? r->keep : c;
        j++;
    }
    *n_sel = n;
    return LBK_OK;
}

/* The holder: the selected rows [j0, j1) through the engine, their lists
 * from the start of FILL_KEYS and FILL_ROWS. */
static lbk_status fill_group(lbk_index_radius_run *r, uint64_t j0, uint64_t j1)
{
    lbk_index *s = r->s;
    const uint64_t dim = (uint64_t)s->shape.dim, chunk = lbk_index_radius_engine_chunk(r);
    const uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    for (uint64_t at = j0; at < j1; at += chunk) {
        const uint64_t m = j1 - at < chunk ? j1 - at : chunk, from = offsets[at] - offsets[j0];
        uint64_t *off = AT(r, CHUNK_OFFSETS, uint64_t);
        for (uint64_t i = 0; i <= m; i++)
            off[i] = offsets[at + i] - offsets[at];
        LBK_TRY(lbk_engine_radius_fill(
            s->engine, AT(r, SEL_POINTS, float) + at * dim, AT(r, SEL_BOUND, float) + at, m, off,
            AT(r, FILL_KEYS, float) + from, AT(r, FILL_ROWS, uint32_t) + from));
    }
    return LBK_OK;
}

/* The end of the group of selected rows from j0 whose whole lists the
 * budget holds (one row at least: a truncated list is filled whole before
 * its first `keep` are taken). */
static uint64_t group_end(const lbk_index_radius_run *r, uint64_t j0, uint64_t n)
{
    const uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    uint64_t j1 = j0 + 1;
    while (j1 < n && offsets[j1 + 1] - offsets[j0] <= r->budget)
        j1++;
    return j1;
}

static lbk_index_radius_entry entry_of(const lbk_index *s, float key, uint32_t pos, uint32_t row)
{
    return (lbk_index_radius_entry){key, pos, s->shard.labels ? s->shard.labels[row] : -1, 0,
                                    lbk_dataset_id(&s->shard, row)};
}

static int id_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A list longer than `keep`: its first `keep` by (key, id). The engine's
 * list is in (key, row) order, so only the keys equal to the last one kept
 * need their ids: the smallest of them go. */
static lbk_status keep_first(const lbk_index *s, const float *keys, const uint32_t *rows,
                             uint64_t m, uint64_t keep, uint32_t pos, lbk_index_radius_entry *out)
{
    const float last = keys[keep - 1];
    uint64_t a = keep - 1, b = keep;
    while (a > 0 && keys[a - 1] == last)
        a--;
    while (b < m && keys[b] == last)
        b++;
    for (uint64_t e = 0; e < a; e++)
        out[e] = entry_of(s, keys[e], pos, rows[e]);
    uint64_t *tie = malloc((size_t)(b - a) * 2 * sizeof *tie);
    LBK_FAIL_IF(!tie, LBK_ERR_NOMEM, "out of host memory for %llu tied radius entries",
                (unsigned long long)(b - a));
    for (uint64_t e = a; e < b; e++) /* (id, row) pairs, sorted by id */
        tie[2 * (e - a)] = lbk_dataset_id(&s->shard, rows[e]), tie[2 * (e - a) + 1] = rows[e];
    qsort(tie, (size_t)(b - a), 2 * sizeof *tie, id_cmp);
    for (uint64_t e = a; e < keep; e++)
        out[e] = entry_of(s, last, pos, (uint32_t)tie[2 * (e - a) + 1]);
    free(tie);
    return LBK_OK;
}

/* The holder: selected row j's list (m entries at `first` in the fill
 * arrays) as entries for its owner, at most `keep` of them. */
static lbk_status list_entries(lbk_index_radius_run *r, uint64_t j, uint64_t first, uint64_t m,
                               lbk_index_radius_entry *out, uint64_t *n_out)
{
    const lbk_index *s = r->s;
    const float *keys = AT(r, FILL_KEYS, float) + first;
    const uint32_t *rows = AT(r, FILL_ROWS, uint32_t) + first;
    const uint32_t pos = AT(r, SEL_POS, uint32_t)[j];
    for (uint64_t e = 0; e < m; e++)
        LBK_FAIL_IF(rows[e] >= s->shard.rows, LBK_ERR_INTERNAL,
                    "internal: the engine answered row %lu of a shard of %llu rows",
                    (unsigned long)rows[e], (unsigned long long)s->shard.rows);
    const uint64_t keep = r->keep && m > r->keep ? r->keep : m;
    if (keep < m)
        LBK_TRY(keep_first(s, keys, rows, m, keep, pos, out + *n_out));
    else
        for (uint64_t e = 0; e < m; e++)
            out[*n_out + e] = entry_of(s, keys[e], pos, rows[e]);
    *n_out += keep;
    return LBK_OK;
}

/* The holder: the round's lists from the engine, as entries for their
 * owners (packed by owner, since work rows come in source order), filled
 * in groups within the budget. */
lbk_status lbk_index_radius_fill_round(lbk_index_radius_run *r, uint32_t round)
{
    lbk_index *s = r->s;
    uint64_t n = 0, most = 0, n_out = 0;
    LBK_TRY(select_round(r, round, &n));
    const uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    for (uint64_t j0 = 0, j1 = 0; j0 < n; j0 = j1) {
        j1 = group_end(r, j0, n);
        most = offsets[j1] - offsets[j0] > most ? offsets[j1] - offsets[j0] : most;
    }
    const uint64_t sent = lbk_index_radius_total(r->out_counts, s->comm->size);
    LBK_TRY(lbk_index_radius_reserve(r, FILL_KEYS, most * sizeof(float), "radius lists"));
    LBK_TRY(lbk_index_radius_reserve(r, FILL_ROWS, most * sizeof(uint32_t), "radius lists"));
    /* The engine's largest call may be far more rows than the round has
     * (2.3 GB of offsets, untouched, for the tree engine's). */
    const uint64_t chunk =
        lbk_index_radius_engine_chunk(r) < n ? lbk_index_radius_engine_chunk(r) : n;
    LBK_TRY(lbk_index_radius_reserve(r, CHUNK_OFFSETS, (chunk + 1) * sizeof(uint64_t),
                                     "radius lists"));
    LBK_TRY(lbk_index_radius_reserve(r, ENTRIES_OUT, sent * sizeof(lbk_index_radius_entry),
                                     "radius lists out"));
    lbk_index_radius_entry *out = AT(r, ENTRIES_OUT, lbk_index_radius_entry);
    for (uint64_t j0 = 0, j1 = 0; j0 < n; j0 = j1) {
        j1 = group_end(r, j0, n);
        LBK_TRY(fill_group(r, j0, j1));
        for (uint64_t j = j0; j < j1; j++)
            LBK_TRY(list_entries(r, j, offsets[j] - offsets[j0], offsets[j + 1] - offsets[j], out,
                                 &n_out));
    }
    lbk_index_radius_engine_work(s);
    LBK_FAIL_IF(n_out != sent, LBK_ERR_INTERNAL,
                "internal: %llu radius entries out where %llu were counted",
                (unsigned long long)n_out, (unsigned long long)sent);
    return LBK_OK;
}
