/* The query rows a run searches (run_state.h's todo): every row, or, in a
 * run resumed from a checkpoint, those it did not finish. The index sees
 * them as rows 0 .. todo_rows - 1, split over the ranks as any query set
 * (so the remaining rows are spread over however many ranks resume); the
 * run maps them back to their rows of the query file wherever a row's
 * place matters: the outputs' offsets, the text's row numbers, the truth.
 * docs/design.md, "Checkpoints and resume". */
#include "run_state.h"

#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

uint64_t lbk_run_rows_global(const lbk_run_state *s, uint64_t v, uint64_t *run)
{
    /* Few ranges (at most one more than the finished ones): a walk. */
    for (uint64_t i = 0; i < s->todo_count; i++) {
        const lbk_run_range *r = &s->todo[i];
        if (v < r->count) {
            if (run)
                *run = r->count - v;
            return r->first + v;
        }
        v -= r->count;
    }
    if (run)
        *run = 0;
    return s->shape.query_rows;
}

lbk_status lbk_run_rows_set(lbk_run_state *s, const lbk_run_range *finished, uint64_t n)
{
    const uint64_t rows = s->shape.query_rows;
    free(s->todo);
    s->todo = malloc((n + 1) * sizeof *s->todo);
    LBK_FAIL_IF(!s->todo, LBK_ERR_NOMEM, "rank %d: out of host memory for the query rows",
                s->comm->rank);
    uint64_t at = 0, m = 0;
    s->todo_rows = 0;
    for (uint64_t i = 0; i <= n; i++) {
        const uint64_t end = i < n ? finished[i].first : rows;
        if (end > at) {
            s->todo[m++] = (lbk_run_range){at, end - at};
            s->todo_rows += end - at;
        }
        if (i < n)
            at = finished[i].first + finished[i].count;
    }
    s->todo_count = m;
    return LBK_OK;
}

/* The rows of the query file that [v, v + count) spans: [*lo, *hi). */
static void span(const lbk_run_state *s, uint64_t v, uint64_t count, uint64_t *lo, uint64_t *hi)
{
    *lo = count ? lbk_run_rows_global(s, v, NULL) : 0;
    *hi = count ? lbk_run_rows_global(s, v + count - 1, NULL) + 1 : 0;
}

/* Row by row, the spanned rows of size `bytes` each moved down over the
 * finished ones between them (none in a fresh run). */
static void compact(const lbk_run_state *s, uint64_t v, uint64_t count, uint64_t lo, char *data,
                    size_t bytes)
{
    for (uint64_t q = 0; q < count;) {
        uint64_t run;
        const uint64_t g = lbk_run_rows_global(s, v + q, &run);
        run = run < count - q ? run : count - q;
        if (g - lo != q)
            memmove(data + q * bytes, data + (g - lo) * bytes, run * bytes);
        q += run;
    }
}

lbk_status lbk_run_rows_read(const lbk_run_state *s, uint64_t v, uint64_t count, lbk_dataset *out)
{
    uint64_t lo, hi;
    span(s, v, count, &lo, &hi);
    /* A graph searched as queries reads its reference rows, and searches
     * them as float32 queries (compact ones widened, exactly). */
    LBK_TRY(lbk_inputs_read_rows(s->job, !s->graph_queries, lo, hi, out));
    LBK_TRY(lbk_dataset_widen(out));
    if (hi - lo == count)
        return LBK_OK;
    compact(s, v, count, lo, (char *)out->points, (size_t)out->dim * sizeof *out->points);
    if (out->labels)
        compact(s, v, count, lo, (char *)out->labels, sizeof *out->labels);
    out->rows = count;
    return LBK_OK;
}

lbk_status lbk_run_rows_read_targets(const lbk_run_state *s, uint64_t v, uint64_t count,
                                     double *out)
{
    uint64_t lo, hi;
    span(s, v, count, &lo, &hi);
    if (hi - lo == count)
        return lbk_inputs_read_targets(s->job, true, lo, hi, out);
    lbk_status st = LBK_OK;
    double *all = malloc((hi - lo) * sizeof *all);
    LBK_FAIL_IF(!all, LBK_ERR_NOMEM, "rank %d: out of host memory for the query targets",
                s->comm->rank);
    st = lbk_inputs_read_targets(s->job, true, lo, hi, all);
    if (st == LBK_OK) {
        compact(s, v, count, lo, (char *)all, sizeof *all);
        memcpy(out, all, count * sizeof *out);
    }
    free(all);
    return st;
}
