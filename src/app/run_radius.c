#include "run_radius.h"

#include "alloc_large.h"
#include "dataset_read.h"
#include "graph_npz.h"
#include "log.h"
#include "outfile.h"
#include "radius.h"
#include "try.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rank 0: the radii file, every value a radius of the metric. */
static lbk_status read_radii(lbk_run_state *s, uint64_t n)
{
    const lbk_job *job = s->job;
    lbk_status st = LBK_OK;
    double *v = lbk_alloc_large_logged(n ? n : 1, sizeof *v, "radii", &st);
    if (st == LBK_OK)
        st = lbk_dataset_read_values(job->radius.radii, "query.radii", n, v);
    for (uint64_t q = 0; q < n && st == LBK_OK; q++) {
        s->radii[q] = (float)v[q];
        if (!lbk_radius_valid(job->knn.metric, s->radii[q])) {
            lbk_error("query.radii: %s:%llu: %g is not a radius (a finite number, >= 0 but for "
                      "metric ip)",
                      job->radius.radii, (unsigned long long)(q + 1), v[q]);
            st = LBK_ERR_INPUT;
        }
    }
    lbk_alloc_large_free(v);
    return st;
}

lbk_status lbk_run_radius_share(lbk_run_state *s)
{
    if (!lbk_job_radius_task(s->job) || !s->job->radius.radii[0])
        return LBK_OK;
    const uint64_t n = s->shape.query_rows;
    lbk_status st = LBK_OK;
    s->radii = lbk_alloc_large_logged(n ? n : 1, sizeof *s->radii, "radii", &st);
    if (st == LBK_OK && s->root)
        st = read_radii(s, n);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    return lbk_comm_bcast_floats(s->comm, s->radii, n);
}

/* The two passes' state: the counts of every query (every rank, gathered),
 * the graph's row offsets and its file. */
typedef struct {
    lbk_run_state *s;
    uint64_t rows;
    uint64_t *counts;
    uint64_t *indptr; /* rows + 1: where each row's stored list begins */
    lbk_graph_npz_layout layout;
    lbk_outfile graph, counts_file, report;
    bool graph_open, counts_open, report_open;
} radius_out;

static lbk_status count_emit(void *user, const lbk_index_radius_slice *slice)
{
    radius_out *o = user;
    for (uint64_t q = 0; q < slice->slice_count; q++)
        o->counts[lbk_index_radius_row(slice, q)] = slice->counts[q];
    return LBK_OK;
}

static void put_le(unsigned char *p, uint64_t v, unsigned size)
{
    for (unsigned i = 0; i < size; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Rows [row, row + n) of a slice, from its entry `first` on: their ids and
 * distances at their places. */
static lbk_status write_run(radius_out *o, const lbk_index_radius_slice *slice, uint64_t first,
                            uint64_t row, uint64_t n, unsigned char *buf)
{
    const unsigned w = o->layout.index_size;
    const uint64_t at = o->indptr[row], m = o->indptr[row + n] - at;
    if (m == 0)
        return LBK_OK;
    const lbk_graph_npz_member *ind = &o->layout.member[LBK_GRAPH_NPZ_INDICES];
    const lbk_graph_npz_member *dat = &o->layout.member[LBK_GRAPH_NPZ_DATA];
    for (uint64_t e = 0; e < m; e++)
        put_le(buf + e * w, slice->ids[first + e], w);
    LBK_TRY(lbk_outfile_write_at(&o->graph, ind->array_offset + at * w, buf, (size_t)(m * w)));
    float *d = (float *)buf;
    for (uint64_t e = 0; e < m; e++)
        d[e] = lbk_knn_key_to_distance(o->s->job->knn.metric, slice->keys[first + e]);
    return lbk_outfile_write_at(&o->graph, dat->array_offset + at * 4, buf, (size_t)(m * 4));
}

/* The fill pass: each slice's lists at their rows' offsets, runs of
 * consecutive rows in one write each. */
static lbk_status fill_emit(void *user, const lbk_index_radius_slice *slice)
{
    radius_out *o = user;
    const uint64_t entries = slice->slice_count ? slice->indptr[slice->slice_count] : 0;
    if (entries == 0)
        return LBK_OK;
    unsigned char *buf = malloc((size_t)entries * 8);
    LBK_FAIL_IF(!buf, LBK_ERR_NOMEM, "out of host memory for %llu radius entries",
                (unsigned long long)entries);
    lbk_status st = LBK_OK;
    uint64_t q = 0;
    while (q < slice->slice_count && st == LBK_OK) {
        const uint64_t row = lbk_index_radius_row(slice, q);
        uint64_t n = 1;
        while (q + n < slice->slice_count && lbk_index_radius_row(slice, q + n) == row + n)
            n++;
        for (uint64_t i = 0; i < n && st == LBK_OK; i++)
            if (slice->indptr[q + i + 1] - slice->indptr[q + i] !=
                o->indptr[row + i + 1] - o->indptr[row + i]) {
                lbk_error("internal: radius row %llu: %llu entries, counted %llu",
                          (unsigned long long)(row + i),
                          (unsigned long long)(slice->indptr[q + i + 1] - slice->indptr[q + i]),
                          (unsigned long long)(o->indptr[row + i + 1] - o->indptr[row + i]));
                st = LBK_ERR_INTERNAL;
            }
        if (st == LBK_OK)
            st = write_run(o, slice, slice->indptr[q], row, n, buf);
        q += n;
    }
    free(buf);
    return st;
}

/* Collective: the search with `sink`'s emit. */
static lbk_status search(radius_out *o, bool count_only,
                         lbk_status (*emit)(void *, const lbk_index_radius_slice *))
{
    lbk_run_state *s = o->s;
    const lbk_job *job = s->job;
    const lbk_index_radius_params params = {
        s->radii, (float)job->knn.radius, job->radius.max_neighbors,
        job->radius.overflow == LBK_OVERFLOW_TRUNCATE, count_only};
    const lbk_index_radius_sink sink = {emit, NULL, o};
    return lbk_index_radius(s->index, lbk_job_self_search(job), o->rows, s->queries.points,
                            &params, &sink);
}

/* Every rank: the stored list lengths' offsets from the counts. */
static void make_indptr(radius_out *o)
{
    const lbk_job *job = o->s->job;
    const uint64_t cap =
        job->radius.overflow == LBK_OVERFLOW_TRUNCATE ? job->radius.max_neighbors : 0;
    o->indptr[0] = 0;
    for (uint64_t q = 0; q < o->rows; q++) {
        const uint64_t c = o->counts[q];
        o->indptr[q + 1] = o->indptr[q] + (cap > 0 && c > cap ? cap : c);
    }
}

/* Collective: rank 0 creates a file the others write into too (shared). */
static lbk_status open_shared(const lbk_comm *comm, lbk_outfile *f, const char *path,
                              const char *what, bool *open)
{
    const bool shared = comm->size > 1;
    lbk_status st = comm->rank == 0 ? lbk_outfile_create(f, path, what, shared) : LBK_OK;
    LBK_TRY(lbk_comm_agree(comm, st));
    *open = comm->rank == 0;
    if (!shared)
        return LBK_OK;
    LBK_TRY(lbk_comm_bcast_bytes(comm, f, sizeof *f));
    st = comm->rank == 0 ? LBK_OK : lbk_outfile_join(f);
    *open = st == LBK_OK;
    return lbk_comm_agree(comm, st);
}

static lbk_status write_graph_at(void *file, uint64_t offset, const void *data, size_t size)
{
    return lbk_outfile_write_at(file, offset, data, size);
}

/* Rank 0: the graph's indptr, then the rest of the file. */
static lbk_status finish_graph(radius_out *o)
{
    const unsigned w = o->layout.index_size;
    const lbk_graph_npz_member *ptr = &o->layout.member[LBK_GRAPH_NPZ_INDPTR];
    const uint64_t piece = (uint64_t)1 << 16;
    unsigned char buf[((uint64_t)1 << 16) * 8];
    for (uint64_t at = 0; at <= o->rows; at += piece) {
        const uint64_t n = o->rows + 1 - at < piece ? o->rows + 1 - at : piece;
        for (uint64_t i = 0; i < n; i++)
            put_le(buf + i * w, o->indptr[at + i], w);
        LBK_TRY(
            lbk_outfile_write_at(&o->graph, ptr->array_offset + at * w, buf, (size_t)(n * w)));
    }
    const char *path = lbk_outfile_write_path(&o->graph);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    LBK_FAIL_IF(fd < 0, LBK_ERR_IO, "%s: opening it to read it back failed", path);
    const lbk_graph_npz_sink sink = {o->s->job->output.graph, -1, write_graph_at, &o->graph};
    const lbk_status st = lbk_graph_npz_finish_read(&o->layout, &sink, fd);
    close(fd);
    return st;
}

/* Rank 0: the counts as a .npy vector of int64. */
static lbk_status write_counts(radius_out *o)
{
    const char *path = o->s->job->radius.counts;
    LBK_TRY(lbk_outfile_create(&o->counts_file, path, "output.counts", false));
    o->counts_open = true;
    unsigned char head[LBK_DATASET_NPY_HEADER_MAX];
    const size_t h = lbk_npy_header("<i8", o->rows, 1, true, head);
    LBK_TRY(lbk_outfile_write_at(&o->counts_file, 0, head, h));
    return lbk_outfile_write_at(&o->counts_file, h, o->counts, (size_t)o->rows * 8);
}

static void summary(const radius_out *o)
{
    const lbk_job *job = o->s->job;
    uint64_t total = 0, lo = UINT64_MAX, hi = 0, truncated = 0;
    const uint64_t cap = job->radius.max_neighbors;
    for (uint64_t q = 0; q < o->rows; q++) {
        const uint64_t c = o->counts[q];
        total += c;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        truncated += cap > 0 && c > cap;
    }
    printf("radius: %llu neighbours of %llu %s; per query min %llu, mean %.3f, max %llu",
           (unsigned long long)total, (unsigned long long)o->rows,
           lbk_job_self_search(job) ? "points" : "queries",
           (unsigned long long)(o->rows ? lo : 0),
           o->rows ? (double)total / (double)o->rows : 0.0, (unsigned long long)hi);
    if (job->radius.overflow == LBK_OVERFLOW_TRUNCATE && cap > 0)
        printf("; %llu truncated at radius.max_neighbors = %llu", (unsigned long long)truncated,
               (unsigned long long)cap);
    printf("\n");
}

/* Collective: the graph's layout and file, then the fill pass into it. */
static lbk_status fill(radius_out *o)
{
    const lbk_run_state *s = o->s;
    const uint64_t nnz = o->indptr[o->rows], cols = s->shape.reference_rows;
    const bool wide = o->rows > INT32_MAX || cols > INT32_MAX || nnz > INT32_MAX;
    LBK_TRY(
        lbk_comm_agree(s->comm, lbk_graph_npz_layout_csr(&o->layout, o->rows, cols, nnz,
                                                         wide ? 8 : 4, s->job->output.graph)));
    LBK_TRY(
        open_shared(s->comm, &o->graph, s->job->output.graph, "output.graph", &o->graph_open));
    LBK_TRY(search(o, false, fill_emit));
    return lbk_comm_agree(s->comm, s->root ? finish_graph(o) : LBK_OK);
}

/* Collective: the count pass, its counts on every rank, then the lists
 * where output.graph asks for them. */
static lbk_status passes(radius_out *o)
{
    lbk_run_state *s = o->s;
    const lbk_job *job = s->job;
    lbk_status st = LBK_OK;
    o->counts = lbk_alloc_large_logged(o->rows + 1, sizeof *o->counts, "radius counts", &st);
    if (st == LBK_OK)
        o->indptr = lbk_alloc_large_logged(o->rows + 1, sizeof *o->indptr, "radius indptr", &st);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    memset(o->counts, 0, (size_t)(o->rows + 1) * sizeof *o->counts);
    LBK_TRY(search(o, true, count_emit));
    LBK_TRY(lbk_comm_allreduce_or_bytes(s->comm, o->counts, o->rows * sizeof *o->counts));
    make_indptr(o);
    if (job->output.graph[0] && !job->radius.count_only)
        LBK_TRY(fill(o));
    if (s->root && job->radius.counts[0])
        st = write_counts(o);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    char *text = NULL;
    size_t len = 0;
    st = lbk_run_report_text(s, &text, &len);
    if (st == LBK_OK && s->root && !lbk_log_is_quiet())
        summary(o);
    if (st == LBK_OK && text) {
        st = lbk_outfile_create(&o->report, job->output.report, "output.report", false);
        o->report_open = st == LBK_OK;
        if (st == LBK_OK)
            st = lbk_outfile_write_at(&o->report, 0, text, len);
    }
    free(text);
    return lbk_comm_agree(s->comm, st);
}

/* Collective: the files closed, then (rank 0, all agreed) committed. */
static lbk_status commit(radius_out *o, lbk_status st)
{
    const lbk_comm *comm = o->s->comm;
    lbk_status closed = LBK_OK;
    if (o->graph_open)
        closed = lbk_outfile_close(&o->graph);
    if (o->counts_open && closed == LBK_OK)
        closed = lbk_outfile_close(&o->counts_file);
    if (o->report_open && closed == LBK_OK)
        closed = lbk_outfile_close(&o->report);
    st = lbk_comm_agree(comm, st != LBK_OK ? st : closed);
    if (st == LBK_OK && comm->rank == 0) {
        lbk_outfile *files[3];
        int n = 0;
        if (o->graph_open)
            files[n++] = &o->graph;
        if (o->counts_open)
            files[n++] = &o->counts_file;
        if (o->report_open)
            files[n++] = &o->report; /* the report last, as lbknn run's */
        st = lbk_outfile_commit(files, n);
    }
    st = lbk_comm_agree(comm, st);
    if (st != LBK_OK) {
        if (o->graph_open)
            lbk_outfile_discard(&o->graph, comm->rank == 0);
        if (o->counts_open)
            lbk_outfile_discard(&o->counts_file, true);
        if (o->report_open)
            lbk_outfile_discard(&o->report, true);
    }
    return st;
}

lbk_status lbk_run_radius(lbk_run_state *s)
{
    radius_out o = {.s = s, .rows = s->shape.query_rows};
    const lbk_status st = commit(&o, passes(&o));
    lbk_alloc_large_free(o.counts);
    lbk_alloc_large_free(o.indptr);
    return st;
}
