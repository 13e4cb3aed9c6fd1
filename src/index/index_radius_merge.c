/* The radius search's merge on an owner (index_radius_impl.h): one
 * round's entries from every holder placed and sorted per query, the
 * point itself left out, the cap applied, and the round to the sink. */
#include "index_radius_impl.h"

#include "timer.h"
#include "try.h"

#include <string.h>

#define AT LBK_INDEX_RADIUS_AT

/* (key, id) order: x before y. */
static bool entry_before(const lbk_index_radius_entry *x, const lbk_index_radius_entry *y)
{
    return x->key < y->key || (!(x->key > y->key) && x->id < y->id);
}

/* The end of the run of entries in (key, id) order from i. */
static uint64_t run_end(const lbk_index_radius_entry *a, uint64_t i, uint64_t n)
{
    while (i + 1 < n && !entry_before(&a[i + 1], &a[i]))
        i++;
    return i + 1;
}

/* One query's entries in (key, id) order: each holder's come as a run in
 * (key, row) order, which is (key, id) order where a shard's ids ascend
 * with its rows (row shards, replicas, one rank), so a list from one
 * holder is checked, not sorted, and several holders' runs are merged in
 * pairs (tmp: room for n). Returns where the sorted list lies. */
static const lbk_index_radius_entry *sort_list(lbk_index_radius_entry *a,
                                               lbk_index_radius_entry *tmp, uint64_t n)
{
    if (n == 0 || run_end(a, 0, n) == n)
        return a;
    lbk_index_radius_entry *src = a, *dst = tmp;
    for (;;) {
        uint64_t runs = 0;
        for (uint64_t i = 0; i < n; runs++) {
            const uint64_t j = run_end(src, i, n), k = j < n ? run_end(src, j, n) : j;
            uint64_t x = i, y = j, o = i;
            while (x < j && y < k)
                dst[o++] = entry_before(&src[y], &src[x]) ? src[y++] : src[x++];
            while (x < j)
                dst[o++] = src[x++];
            while (y < k)
                dst[o++] = src[y++];
            i = k;
        }
        lbk_index_radius_entry *t = src;
        src = dst;
        dst = t;
        if (runs <= 1)
            return src;
    }
}

/* The owner: the round's queries [q0, q1) (contiguous: rounds follow the
 * query order). */
static void round_range(const lbk_index_radius_run *r, uint32_t round, uint64_t *q0, uint64_t *q1)
{
    const uint32_t *rounds = AT(r, OWN_ROUND, uint32_t);
    uint64_t i = 0;
    while (i < r->own_n && rounds[i] < round)
        i++;
    *q0 = i;
    while (i < r->own_n && rounds[i] == round)
        i++;
    *q1 = i;
}

/* The owner: the entries received, each query's placed together (counts
 * into OUT_INDPTR, relative to q0). Entries that came grouped by query in
 * query order (one holder: one rank, replicas) are placed already: the
 * buffers change places, PLACED's room becoming finish_round's scratch. */
static lbk_status place_entries(lbk_index_radius_run *r, uint64_t q0, uint64_t q1,
                                uint64_t *placed)
{
    const int p = r->s->comm->size;
    const uint64_t n = lbk_index_radius_total(r->in_counts, p), nq = q1 - q0;
    const lbk_index_radius_entry *in = r->buf[ENTRIES_IN].data;
    const uint32_t *sent = AT(r, SENT_QUERY, uint32_t);
    LBK_TRY(
        lbk_index_radius_reserve(r, PLACED, n * sizeof(lbk_index_radius_entry), "radius lists"));
    LBK_TRY(lbk_index_radius_reserve(r, OUT_INDPTR, (nq + 1) * sizeof(uint64_t), "radius lists"));
    uint64_t *at = AT(r, OUT_INDPTR, uint64_t);
    memset(at, 0, (size_t)(nq + 1) * sizeof *at);
    bool in_order = true;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t e = 0, last = q0;
        for (int d = 0; d < p; d++)
            for (uint64_t i = 0; i < r->in_counts[d]; i++, e++) {
                const uint64_t q = sent[r->send_start[d] + in[e].pos];
                LBK_FAIL_IF(q < q0 || q >= q1, LBK_ERR_INTERNAL,
                            "internal: rank %d answered radius query %llu outside its round", d,
                            (unsigned long long)q);
                in_order = in_order && q >= last;
                last = q;
                if (pass == 0)
                    at[q - q0 + 1]++;
                else
                    AT(r, PLACED, lbk_index_radius_entry)[at[q - q0]++] = in[e];
            }
        if (pass == 0)
            for (uint64_t q = 0; q < nq; q++)
                at[q + 1] += at[q];
        if (pass == 0 && in_order) {
            const lbk_exchange_buffer room = r->buf[PLACED];
            r->buf[PLACED] = r->buf[ENTRIES_IN];
            r->buf[ENTRIES_IN] = room;
            break;
        }
        if (pass == 1) /* at[q] moved to the end of q's entries: back to the starts */
            for (uint64_t q = nq; q > 0; q--)
                at[q] = at[q - 1];
        at[0] = 0;
    }
    *placed = n;
    return LBK_OK;
}

/* The owner: the round's entries placed and the sink's arrays. */
static lbk_status round_arrays(lbk_index_radius_run *r, uint64_t q0, uint64_t q1, uint64_t *n)
{
    LBK_TRY(place_entries(r, q0, q1, n));
    LBK_TRY(
        lbk_index_radius_reserve(r, OUT_COUNTS, (q1 - q0) * sizeof(uint64_t), "radius counts"));
    LBK_TRY(lbk_index_radius_reserve(r, OUT_IDS, *n * sizeof(uint64_t), "radius lists"));
    LBK_TRY(lbk_index_radius_reserve(r, OUT_KEYS, *n * sizeof(float), "radius lists"));
    return lbk_index_radius_reserve(r, OUT_LABELS, *n * sizeof(int32_t), "radius lists");
}

/* Collective: the owner's queries of the round, each's entries sorted,
 * itself left out (self search), cut at the cap (truncate), and the round
 * to the sink, agreed before (a sink may be collective: the vote sink
 * looks labels up across ranks) and after. */
static lbk_status finish_round(lbk_index_radius_run *r, uint32_t round)
{
    const lbk_comm *comm = r->s->comm;
    uint64_t q0 = 0, q1 = 0, n = 0;
    round_range(r, round, &q0, &q1);
    const uint64_t nq = q1 - q0, cap = r->p->truncate ? r->p->max_neighbors : 0;
    LBK_TRY(lbk_comm_agree(comm, round_arrays(r, q0, q1, &n)));
    uint64_t *indptr = AT(r, OUT_INDPTR, uint64_t), *count = AT(r, OUT_COUNTS, uint64_t);
    uint64_t *ids = AT(r, OUT_IDS, uint64_t);
    float *keys = AT(r, OUT_KEYS, float);
    int32_t *labels = AT(r, OUT_LABELS, int32_t);
    lbk_index_radius_entry *placed = AT(r, PLACED, lbk_index_radius_entry);
    lbk_index_radius_entry *scratch = r->buf[ENTRIES_IN].data; /* placed: free again */
    uint64_t out = 0, begin = 0;
    for (uint64_t q = 0; q < nq; q++) {
        const uint64_t end = indptr[q + 1], self = AT(r, OWN_ROW, uint64_t)[q0 + q];
        const lbk_index_radius_entry *list =
            sort_list(placed + begin, scratch + begin, end - begin);
        indptr[q] = out;
        uint64_t kept = 0;
        for (uint64_t e = 0; e < end - begin; e++) {
            if (r->self && list[e].id == self)
                continue;
            if (cap == 0 || kept < cap) {
                ids[out + kept] = list[e].id;
                keys[out + kept] = list[e].key;
                labels[out + kept] = list[e].label;
            }
            kept++;
        }
        /* Where holders sent their first `keep` alone, the count is the
         * holders' sum, as a count-only search gives it. */
        const bool cut =
            lbk_index_radius_own_recv(r)[q0 + q] < AT(r, OWN_COUNT, uint64_t)[q0 + q];
        count[q] = cut ? lbk_index_radius_exact_count(r, q0 + q) : kept;
        out += cap > 0 && kept > cap ? cap : kept;
        begin = end;
    }
    indptr[nq] = out;
    r->s->info.stats.queries_owned += nq;
    const lbk_index_radius_slice slice = {r->b.first,
                                          r->b.count,
                                          r->b.slice_first + q0,
                                          nq,
                                          count,
                                          indptr,
                                          ids,
                                          keys,
                                          r->s->shard.labels ? labels : NULL,
                                          r->self && r->spatial ? &r->s->shard : NULL,
                                          r->self ? r->s->self_order : NULL};
    return lbk_comm_agree(comm, r->sink->emit(r->sink->user, &slice));
}

/* Collective: the holders' entries to their owners. One rank is its own
 * holder: the buffers change places instead of 24 bytes an entry copied
 * (0.07 s of a 1 s search at 128 neighbours, 1e5 queries). */
static lbk_status entries_back(lbk_index_radius_run *r, lbk_status st)
{
    lbk_index *s = r->s;
    if (s->comm->size > 1)
        return lbk_exchange_rows(s->comm, st, r->buf[ENTRIES_OUT].data, r->out_counts,
                                 sizeof(lbk_index_radius_entry), &r->buf[ENTRIES_IN],
                                 r->in_counts, &s->info.stats.bytes_sent);
    LBK_TRY(st);
    const lbk_exchange_buffer out = r->buf[ENTRIES_OUT];
    r->buf[ENTRIES_OUT] = r->buf[ENTRIES_IN];
    r->buf[ENTRIES_IN] = out;
    r->in_counts[0] = r->out_counts[0];
    return LBK_OK;
}

/* Collective: one round of the fill: the holders' lists to the owners,
 * then the owners' lists to the sinks. */
lbk_status lbk_index_radius_run_round(lbk_index_radius_run *r, uint32_t round)
{
    lbk_index *s = r->s;
    double t = lbk_timer_now();
    const lbk_status st = lbk_index_radius_fill_round(r, round);
    s->info.phase[LBK_PHASE_QUERY] += lbk_timer_now() - t;
    t = lbk_timer_now();
    LBK_TRY(entries_back(r, st));
    for (int q = 0; q < s->comm->size; q++)
        s->info.stats.bytes_received +=
            q == s->comm->rank ? 0 : r->in_counts[q] * sizeof(lbk_index_radius_entry);
    s->info.phase[LBK_PHASE_MERGE] += lbk_timer_now() - t;
    t = lbk_timer_now();
    const lbk_status done = finish_round(r, round);
    s->info.phase[LBK_PHASE_OUTPUT] += lbk_timer_now() - t;
    return done;
}
