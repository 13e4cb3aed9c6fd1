/* The end of a checkpointed run whose ranks own slices (checkpoint.h): the
 * predictions and probability rows, which every run held batch by batch in
 * files of its ranks' own, written by rank 0 in row order from all of them,
 * the checkpoint's streams and this run's. Each stream's rows are in row
 * order, so taking the ranges of all streams in row order reads each held
 * file once from its start, at most OPEN_STREAMS streams' files open at a
 * time. docs/design.md, "Checkpoints and resume". */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include "log.h"
#include "try.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rows at a time from one range. */
#define PIECE_ROWS 65536u
/* Streams whose held files are open at once: every resume adds one stream
 * per rank, so opening them all would run out of descriptors; the others
 * are closed at their read offsets and reopened when their rows come
 * (checkpoint.cross.spatial.p3to1 has five streams: it reopens some). */
#define OPEN_STREAMS 4u

typedef struct {
    uint64_t first, count;
    int stream;
} piece;

static int by_first(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Every stream of the run: the checkpoint's, then this run's ranks' (each
 * rank's whole slice, done now). */
static lbk_checkpoint_stream *all_streams(const lbk_run_state *s, uint64_t *n)
{
    const struct lbk_checkpoint_kept *k = s->resumed;
    const uint64_t old = k ? k->stream_count : 0;
    lbk_checkpoint_stream *m = calloc(old + (uint64_t)s->comm->size, sizeof *m);
    *n = 0;
    if (!m)
        return NULL;
    for (uint64_t i = 0; i < old; i++)
        m[(*n)++] = k->streams[i];
    for (int r = 0; r < s->comm->size; r++) {
        uint64_t first, count;
        lbk_checkpoint_rank_slice(s, r, &first, &count);
        if (count == 0)
            continue;
        lbk_checkpoint_stream *x = &m[(*n)++];
        memset(x, 0, sizeof *x);
        x->id = lbk_run_rows_global(s, first, NULL);
        x->range = malloc(s->todo_count * sizeof *x->range);
        if (!x->range) {
            for (uint64_t i = old; i < *n; i++)
                free(m[i].range);
            free(m);
            return NULL;
        }
        for (uint64_t q = 0; q < count;) {
            uint64_t run;
            const uint64_t g = lbk_run_rows_global(s, first + q, &run);
            run = run < count - q ? run : count - q;
            x->range[x->ranges++] = (lbk_run_range){g, run};
            q += run;
        }
    }
    return m;
}

typedef struct {
    FILE *pred, *proba;
    off_t pred_at, proba_at;
    uint64_t used;
} held_files;

/* The next `rows` of a stream's held files into the outputs at their
 * offsets: the predictions formatted with their rows, the probability
 * rows' lines as they were printed. */
static lbk_status copy_rows(lbk_run_state *s, held_files *h, uint64_t first, uint64_t rows,
                            void *values, char **line, size_t *cap)
{
    const size_t bytes = s->values ? sizeof(double) : sizeof(int32_t);
    if (h->pred) {
        char *text = NULL;
        size_t len = 0;
        LBK_FAIL_IF(fread(values, bytes, rows, h->pred) != rows, LBK_ERR_IO,
                    "a held predictions file ended early");
        LBK_TRY(s->values ? lbk_outputs_format_values(first, rows, values, &text, &len)
                          : lbk_outputs_format_predictions(first, rows, values, &text, &len));
        const lbk_status st =
            lbk_outputs_write_text(&s->outputs, s->outputs.text_offset, text, len);
        free(text);
        LBK_TRY(st);
        s->outputs.text_offset += len;
    }
    for (uint64_t q = 0; h->proba && q < rows; q++) {
        const ssize_t n = getline(line, cap, h->proba);
        LBK_FAIL_IF(n <= 0, LBK_ERR_IO, "a held probabilities file ended early");
        LBK_TRY(lbk_outputs_write_probabilities(&s->outputs, s->outputs.proba_offset, *line,
                                                (size_t)n));
        s->outputs.proba_offset += (uint64_t)n;
    }
    return LBK_OK;
}

static FILE *open_held(const lbk_run_state *s, int h, uint64_t id)
{
    char name[LBK_PATH_MAX + 64];
    const int i = LBK_JOB_OUTPUT_COUNT + h;
    const bool wanted = h == LBK_RUN_HELD_PREDICTIONS ? s->job->output.predictions[0] != '\0'
                                                      : s->proba_rows != NULL;
    if (!wanted)
        return NULL;
    lbk_checkpoint_held_name(s, i, id, name, sizeof name);
    return fopen(name, "rb");
}

static void close_held(held_files *h)
{
    if (h->pred) {
        h->pred_at = ftello(h->pred);
        fclose(h->pred);
    }
    if (h->proba) {
        h->proba_at = ftello(h->proba);
        fclose(h->proba);
    }
    h->pred = h->proba = NULL;
}

/* Stream i's held files open at their read offsets, the least recently
 * used stream's closed if OPEN_STREAMS are. */
static lbk_status use_stream(lbk_run_state *s, const lbk_checkpoint_stream *m, held_files *h,
                             uint64_t n, uint64_t i, uint64_t tick)
{
    h[i].used = tick;
    if (h[i].pred || h[i].proba)
        return LBK_OK;
    uint64_t open = 0, oldest = n;
    for (uint64_t j = 0; j < n; j++)
        if (h[j].pred || h[j].proba) {
            open++;
            if (oldest == n || h[j].used < h[oldest].used)
                oldest = j;
        }
    if (open >= OPEN_STREAMS)
        close_held(&h[oldest]);
    h[i].pred = open_held(s, LBK_RUN_HELD_PREDICTIONS, m[i].id);
    h[i].proba = open_held(s, LBK_RUN_HELD_PROBABILITIES, m[i].id);
    const bool missing =
        (s->job->output.predictions[0] && !h[i].pred) || (s->proba_rows && !h[i].proba);
    LBK_FAIL_IF(missing, LBK_ERR_IO,
                "cannot open the held files of the rows from %" PRIu64 ": %s", m[i].id,
                strerror(errno));
    const bool lost = (h[i].pred && fseeko(h[i].pred, h[i].pred_at, SEEK_SET) != 0) ||
                      (h[i].proba && fseeko(h[i].proba, h[i].proba_at, SEEK_SET) != 0);
    LBK_FAIL_IF(lost, LBK_ERR_IO,
                "cannot seek in the held files of the rows from %" PRIu64 ": %s", m[i].id,
                strerror(errno));
    return LBK_OK;
}

static lbk_status write_streams(lbk_run_state *s, const lbk_checkpoint_stream *m, uint64_t n)
{
    uint64_t count = 0;
    for (uint64_t i = 0; i < n; i++)
        count += m[i].ranges;
    piece *p = malloc((count + 1) * sizeof *p);
    held_files *h = calloc(n + 1, sizeof *h);
    void *values = malloc(PIECE_ROWS * sizeof(double));
    char *line = NULL;
    size_t cap = 0;
    lbk_status st = p && h && values ? LBK_OK : LBK_ERR_NOMEM;
    if (st != LBK_OK)
        lbk_error("out of host memory writing the held predictions");
    count = 0;
    for (uint64_t i = 0; st == LBK_OK && i < n; i++)
        for (uint64_t r = 0; r < m[i].ranges; r++)
            p[count++] = (piece){m[i].range[r].first, m[i].range[r].count, (int)i};
    if (st == LBK_OK)
        qsort(p, count, sizeof *p, by_first);
    for (uint64_t i = 0; st == LBK_OK && i < count; i++) {
        st = use_stream(s, m, h, n, (uint64_t)p[i].stream, i + 1);
        for (uint64_t at = 0; st == LBK_OK && at < p[i].count; at += PIECE_ROWS) {
            const uint64_t rows = p[i].count - at < PIECE_ROWS ? p[i].count - at : PIECE_ROWS;
            st = copy_rows(s, &h[p[i].stream], p[i].first + at, rows, values, &line, &cap);
        }
    }
    for (uint64_t i = 0; h && i < n; i++)
        close_held(&h[i]);
    free(line);
    free(values);
    free(h);
    free(p);
    return st;
}

lbk_status lbk_checkpoint_write_held(lbk_run_state *s)
{
    /* Every rank's held bytes where rank 0 reads them (a shared file
     * system's close-to-open consistency: synced before it opens them). */
    lbk_status st = LBK_OK;
    if (s->proba_rows && fflush(s->proba_rows) != 0) { /* a memory stream */
        lbk_error("rank %d: out of host memory holding its probability rows", s->comm->rank);
        st = LBK_ERR_NOMEM;
    }
    for (int h = 0; h < LBK_RUN_HELD_COUNT && st == LBK_OK; h++)
        if (s->held_fd[h] >= 0 && fdatasync(s->held_fd[h]) != 0) {
            lbk_error("rank %d: cannot sync its held %s: %s", s->comm->rank,
                      lbk_checkpoint_part_key(LBK_JOB_OUTPUT_COUNT + h), strerror(errno));
            st = LBK_ERR_IO;
        }
    LBK_TRY(lbk_comm_agree(s->comm, st));
    if (!s->root || !s->outputs_open)
        return LBK_OK;
    uint64_t n = 0;
    lbk_checkpoint_stream *m = all_streams(s, &n);
    LBK_FAIL_IF(!m, LBK_ERR_NOMEM, "out of host memory writing the held predictions");
    const uint64_t old = s->resumed ? s->resumed->stream_count : 0;
    s->outputs.text_offset = 0;
    s->outputs.proba_offset = 0;
    st = write_streams(s, m, n);
    for (uint64_t i = old; i < n; i++)
        free(m[i].range);
    free(m);
    return st;
}

/* One held graph file's first len bytes: this rank's rows placed. */
static lbk_status load_graph_file(lbk_run_state *s, const char *name, uint64_t len)
{
    lbk_self_rows *rows = &s->graph.rows;
    const size_t record = lbk_self_rows_record_bytes(rows);
    FILE *f = fopen(name, "rb");
    LBK_FAIL_IF(!f, LBK_ERR_IO, "rank %d: cannot open the held graph rows %s: %s", s->comm->rank,
                name, strerror(errno));
    char *rec = malloc(record);
    lbk_status st = rec ? LBK_OK : LBK_ERR_NOMEM;
    if (!rec)
        lbk_error("rank %d: out of host memory reading graph rows", s->comm->rank);
    for (uint64_t at = 0; st == LBK_OK && at + record <= len; at += record) {
        if (fread(rec, 1, record, f) != record) {
            lbk_error("rank %d: the held graph rows %s ended early", s->comm->rank, name);
            st = LBK_ERR_IO;
        } else if (lbk_self_rows_owns(rows, lbk_self_rows_record_row(rec))) {
            st = lbk_self_rows_place(rows, rec);
        }
    }
    free(rec);
    fclose(f);
    return st;
}

lbk_status lbk_checkpoint_load_graph(lbk_run_state *s)
{
    const struct lbk_checkpoint_kept *k = s->resumed;
    char name[LBK_PATH_MAX + 64];
    for (uint64_t i = 0; k && i < k->graph_file_count; i++) {
        lbk_checkpoint_graph_name(s, k->graph_files[i].run, k->graph_files[i].rank, name,
                                  sizeof name);
        LBK_TRY(load_graph_file(s, name, k->graph_files[i].len));
    }
    return LBK_OK;
}
