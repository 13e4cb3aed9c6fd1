#include "run_radius.h"

#include "alloc_large.h"
#include "dataset_read.h"
#include "graph_npz.h"
#include "log.h"
#include "outfile.h"
#include "radius.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Rank 0: the radii file, every value a radius of the metric, checked as
 * read (a double) and taken toward the inside as a float. */
static lbk_status read_radii(lbk_run_state *s, uint64_t n)
{
    const lbk_job *job = s->job;
    const lbk_metric metric = job->knn.metric;
    lbk_status st = LBK_OK;
    double *v = lbk_alloc_large_logged(n ? n : 1, sizeof *v, "radii", &st);
    if (st == LBK_OK)
        st = lbk_dataset_read_values(job->radius.radii, "query.radii", n, v);
    for (uint64_t q = 0; q < n && st == LBK_OK; q++) {
        const char *why = lbk_radius_refusal(metric, v[q]);
        if (why) {
            lbk_error("query.radii: %s:%llu: %g is not a radius: %s", job->radius.radii,
                      (unsigned long long)(q + 1), v[q], why);
            st = LBK_ERR_INPUT;
        } else
            s->radii[q] = lbk_radius_of_double(metric, v[q]);
    }
    lbk_alloc_large_free(v);
    return st;
}

lbk_status lbk_run_radius_share(lbk_run_state *s)
{
    if (!(lbk_job_radius_task(s->job) || lbk_job_radius_votes(s->job)) ||
        !s->job->radius.radii[0])
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
    bool lists; /* a graph: the fill pass after the count pass */
    uint64_t *counts;
    /* rows + 1: where each row's stored list begins (a graph only): the
     * counts' own array, turned into offsets once the counts are written
     * (every rank holds one array of rows + 1, not two). */
    uint64_t *indptr;
    uint64_t total, lo, hi, truncated; /* rank 0: the counts' summary */
    lbk_index_radius_kept kept;        /* the count pass's counts, for the fill */
    lbk_graph_npz_layout layout;
    lbk_outfile graph, counts_file, truncated_file, report;
    bool graph_open, counts_open, truncated_open, report_open;
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

/* A slice's query, by its row: the lists are written in row order. */
typedef struct {
    uint64_t row, q;
} row_at;

static int row_cmp(const void *a, const void *b)
{
    const uint64_t x = ((const row_at *)a)->row, y = ((const row_at *)b)->row;
    return (x > y) - (x < y);
}

/* One list's ids as the file's little-endian integers of w bytes: a
 * plain store where the host is little-endian (the distances are written
 * as the host's floats already), which the byte loop was not (a tenth of
 * the output phase). */
static void put_ids(unsigned char *dst, const uint64_t *ids, uint64_t n, unsigned w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (w == 4) {
        for (uint64_t k = 0; k < n; k++) {
            const uint32_t v = (uint32_t)ids[k];
            memcpy(dst + k * 4, &v, 4);
        }
        return;
    }
    if (w == 8) {
        memcpy(dst, ids, (size_t)n * 8);
        return;
    }
#endif
    for (uint64_t k = 0; k < n; k++)
        put_le(dst + k * w, ids[k], w);
}

/* One list's distances from its keys; l2's loop alone, without the
 * metric's switch per entry, so that it vectorises. */
static void put_distances(float *dst, const float *keys, uint64_t n, lbk_metric metric)
{
    if (metric == LBK_METRIC_L2)
        for (uint64_t k = 0; k < n; k++)
            dst[k] = sqrtf(keys[k]);
    else
        for (uint64_t k = 0; k < n; k++)
            dst[k] = lbk_knn_key_to_distance(metric, keys[k]);
}

/* The rows by[0, n), whose lists lie one after another in the file, from
 * the slice into one write each of ids and distances. */
static lbk_status write_run(radius_out *o, const lbk_index_radius_slice *slice, const row_at *by,
                            uint64_t n, unsigned char *buf)
{
    const unsigned w = o->layout.index_size;
    const uint64_t at = o->indptr[by[0].row], m = o->indptr[by[n - 1].row + 1] - at;
    const lbk_graph_npz_member *ind = &o->layout.member[LBK_GRAPH_NPZ_INDICES];
    const lbk_graph_npz_member *dat = &o->layout.member[LBK_GRAPH_NPZ_DATA];
    uint64_t e = 0;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t k0 = slice->indptr[by[i].q], len = slice->indptr[by[i].q + 1] - k0;
        put_ids(buf + e * w, slice->ids + k0, len, w);
        e += len;
    }
    LBK_TRY(lbk_outfile_write_at(&o->graph, ind->array_offset + at * w, buf, (size_t)(m * w)));
    float *d = (float *)buf;
    e = 0;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t k0 = slice->indptr[by[i].q], len = slice->indptr[by[i].q + 1] - k0;
        put_distances(d + e, slice->keys + k0, len, o->s->job->knn.metric);
        e += len;
    }
    return lbk_outfile_write_at(&o->graph, dat->array_offset + at * 4, buf, (size_t)(m * 4));
}

/* Every list of the slice as long as the count pass made its row. */
static lbk_status check_lengths(const radius_out *o, const lbk_index_radius_slice *slice)
{
    for (uint64_t q = 0; q < slice->slice_count; q++) {
        const uint64_t row = lbk_index_radius_row(slice, q);
        const uint64_t got = slice->indptr[q + 1] - slice->indptr[q];
        const uint64_t want = o->indptr[row + 1] - o->indptr[row];
        LBK_FAIL_IF(got != want, LBK_ERR_INTERNAL,
                    "internal: radius row %llu: %llu entries, counted %llu",
                    (unsigned long long)row, (unsigned long long)got, (unsigned long long)want);
    }
    return LBK_OK;
}

/* The fill pass: each slice's lists at their rows' offsets, the non-empty
 * rows taken in row order and those whose lists lie one after another in
 * the file (rows between them empty) in one write each: a self search's
 * slices come in Morton order, which would be two small writes a row. */
static lbk_status fill_emit(void *user, const lbk_index_radius_slice *slice)
{
    radius_out *o = user;
    const uint64_t entries = slice->slice_count ? slice->indptr[slice->slice_count] : 0;
    if (entries == 0)
        return LBK_OK;
    LBK_TRY(check_lengths(o, slice));
    _Static_assert(LBK_INDEX_RADIUS_SINK_BYTES >= 24, "the sink's copy: 8-byte ids, the order");
    unsigned char *buf = malloc((size_t)entries * 8);
    row_at *by = malloc((size_t)entries * sizeof *by); /* a row a non-empty list at most */
    lbk_status st = LBK_OK;
    if (!buf || !by) {
        lbk_error("out of host memory for %llu radius entries", (unsigned long long)entries);
        st = LBK_ERR_NOMEM;
    }
    uint64_t n = 0;
    for (uint64_t q = 0; q < slice->slice_count && st == LBK_OK; q++)
        if (slice->indptr[q + 1] > slice->indptr[q])
            by[n++] = (row_at){lbk_index_radius_row(slice, q), q};
    bool sorted = true; /* a query search's slices come in row order */
    for (uint64_t i = 1; i < n && sorted; i++)
        sorted = by[i - 1].row < by[i].row;
    if (st == LBK_OK && !sorted)
        qsort(by, (size_t)n, sizeof *by, row_cmp);
    for (uint64_t i = 0; i < n && st == LBK_OK;) {
        uint64_t j = i + 1;
        while (j < n && o->indptr[by[j].row] == o->indptr[by[j - 1].row + 1])
            j++;
        st = write_run(o, slice, by + i, j - i, buf);
        i = j;
    }
    free(by);
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
        s->radii,
        lbk_radius_of_double(job->knn.metric, lbk_job_radius(job)),
        job->radius.max_neighbors,
        job->radius.overflow == LBK_OVERFLOW_TRUNCATE,
        count_only,
        o->lists ? &o->kept : NULL,
        o->lists}; /* the graph's rows written in runs: both passes in row order */
    const lbk_index_radius_sink sink = {emit, NULL, o};
    return lbk_index_radius(s->index, lbk_job_self_search(job), o->rows, s->queries.points,
                            &params, &sink);
}

/* Every rank: the stored list lengths' offsets from the counts, in place:
 * the counts are gone after. */
static void make_indptr(radius_out *o)
{
    const lbk_job *job = o->s->job;
    const uint64_t cap =
        job->radius.overflow == LBK_OVERFLOW_TRUNCATE ? job->radius.max_neighbors : 0;
    uint64_t *a = o->counts, at = 0;
    for (uint64_t q = 0; q < o->rows; q++) {
        const uint64_t c = a[q];
        a[q] = at;
        at += cap > 0 && c > cap ? cap : c;
    }
    a[o->rows] = at;
    o->indptr = a;
    o->counts = NULL;
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

/* Rank 0: which lists were cut at radius.max_neighbors, as a .npy vector
 * of bool (numpy's |b1), one a query, beside output.counts. */
static lbk_status write_truncated(radius_out *o)
{
    const lbk_job *job = o->s->job;
    const uint64_t cap =
        job->radius.overflow == LBK_OVERFLOW_TRUNCATE ? job->radius.max_neighbors : 0;
    LBK_TRY(
        lbk_outfile_create(&o->truncated_file, job->radius.truncated, "output.truncated", false));
    o->truncated_open = true;
    unsigned char head[LBK_DATASET_NPY_HEADER_MAX], flags[1 << 16];
    const size_t h = lbk_npy_header("|b1", o->rows, 1, true, head);
    LBK_TRY(lbk_outfile_write_at(&o->truncated_file, 0, head, h));
    for (uint64_t at = 0; at < o->rows; at += sizeof flags) {
        const uint64_t n = o->rows - at < sizeof flags ? o->rows - at : sizeof flags;
        for (uint64_t q = 0; q < n; q++)
            flags[q] = cap > 0 && o->counts[at + q] > cap;
        LBK_TRY(lbk_outfile_write_at(&o->truncated_file, h + at, flags, (size_t)n));
    }
    return LBK_OK;
}

static void tally(radius_out *o)
{
    const uint64_t cap = o->s->job->radius.max_neighbors;
    o->total = o->hi = o->truncated = 0;
    o->lo = UINT64_MAX;
    for (uint64_t q = 0; q < o->rows; q++) {
        const uint64_t c = o->counts[q];
        o->total += c;
        o->lo = c < o->lo ? c : o->lo;
        o->hi = c > o->hi ? c : o->hi;
        o->truncated += cap > 0 && c > cap;
    }
}

static void summary(const radius_out *o)
{
    const lbk_job *job = o->s->job;
    const uint64_t total = o->total, lo = o->lo, hi = o->hi, truncated = o->truncated;
    const uint64_t cap = job->radius.max_neighbors;
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

/* Every rank: its rows of the graph durable before rank 0 reads the file
 * back for the CRCs: on a file system shared across hosts (NFS) rank 0
 * could read stale pages otherwise (as checkpoint.c's sync_files). */
static lbk_status sync_graph(const radius_out *o)
{
    const lbk_outfile *f = &o->graph;
    LBK_FAIL_IF(o->s->comm->size > 1 && f->fd >= 0 && fdatasync(f->fd) != 0, LBK_ERR_IO,
                "rank %d: %s: cannot sync its rows of the graph: %s", o->s->comm->rank,
                lbk_outfile_write_path(f), strerror(errno));
    return LBK_OK;
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
    LBK_TRY(lbk_comm_agree(s->comm, sync_graph(o)));
    return lbk_comm_agree(s->comm, s->root ? finish_graph(o) : LBK_OK);
}

/* Collective: the count pass, its counts on every rank, then the lists
 * where output.graph asks for them. */
static lbk_status passes(radius_out *o)
{
    lbk_run_state *s = o->s;
    const lbk_job *job = s->job;
    lbk_status st = LBK_OK;
    o->lists = job->output.graph[0] && !job->radius.count_only;
    o->counts = lbk_alloc_large_logged(o->rows + 1, sizeof *o->counts, "radius counts", &st);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    memset(o->counts, 0, (size_t)(o->rows + 1) * sizeof *o->counts);
    LBK_TRY(search(o, true, count_emit));
    LBK_TRY(lbk_comm_allreduce_or_bytes(s->comm, o->counts, o->rows * sizeof *o->counts));
    /* The counts' files before the fill, whose offsets take their array. */
    if (s->root && job->radius.counts[0])
        st = write_counts(o);
    if (st == LBK_OK && s->root && job->radius.truncated[0])
        st = write_truncated(o);
    if (s->root)
        tally(o);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    if (o->lists) {
        make_indptr(o);
        LBK_TRY(fill(o));
    }
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
    if (o->truncated_open && closed == LBK_OK)
        closed = lbk_outfile_close(&o->truncated_file);
    if (o->report_open && closed == LBK_OK)
        closed = lbk_outfile_close(&o->report);
    st = lbk_comm_agree(comm, st != LBK_OK ? st : closed);
    if (st == LBK_OK && comm->rank == 0) {
        lbk_outfile *files[4];
        int n = 0;
        if (o->graph_open)
            files[n++] = &o->graph;
        if (o->counts_open)
            files[n++] = &o->counts_file;
        if (o->truncated_open)
            files[n++] = &o->truncated_file;
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
        if (o->truncated_open)
            lbk_outfile_discard(&o->truncated_file, true);
        if (o->report_open)
            lbk_outfile_discard(&o->report, true);
    }
    return st;
}

/* glibc raises its mmap threshold to the size of each large block freed
 * (up to 32 MiB); blocks below it then come from the heap and, freed,
 * stay in the process. The radius rounds' buffers, grown round by round,
 * and the sinks' per-slice copies held 12 MiB (P = 1) and 20 MiB a rank
 * (P = 2) more that way at the radius graph's peak (1e6 points,
 * bench/RESULTS.md): a fixed threshold gives large blocks back when freed.
 * The CLI is the process, so the setting is its own to make. */
void lbk_run_radius_malloc_policy(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    (void)mallopt(M_MMAP_THRESHOLD, 128 << 10);
#endif
}

lbk_status lbk_run_radius(lbk_run_state *s)
{
    radius_out o = {.s = s, .rows = s->shape.query_rows};
    const lbk_status st = commit(&o, passes(&o));
    lbk_alloc_large_free(o.counts);
    lbk_alloc_large_free(o.indptr);
    lbk_index_radius_kept_free(&o.kept);
    return st;
}
