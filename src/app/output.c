#include "output.h"

#include "log.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char predictions_header[] = "query,label\n";

static lbk_status write_at(const lbk_output_file *f, uint64_t offset, const void *data,
                           size_t len)
{
    const char *p = data;
    while (len > 0) {
        const ssize_t n = pwrite(f->fd, p, len, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            lbk_error("%s: write failed: %s", f->path, strerror(errno));
            return LBK_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return LBK_OK;
}

static lbk_status open_one(lbk_output_file *f, const char *path, bool create)
{
    f->fd = -1;
    f->path[0] = f->partial[0] = '\0';
    if (path[0] == '\0')
        return LBK_OK;
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->partial, sizeof f->partial, "%s.lbknn-partial", path);
    f->fd = open(f->partial, create ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY, 0644);
    LBK_FAIL_IF(f->fd < 0, LBK_ERR_IO, "%s: cannot %s output file: %s", f->partial,
                create ? "create" : "open", strerror(errno));
    return LBK_OK;
}

/* out's files in LBK_OUTPUT_LIST order. */
static void list_files(lbk_outputs *out, lbk_output_file *files[LBK_OUTPUT_COUNT])
{
    int n = 0;
#define OUTPUT_FILE_(name) files[n++] = &out->name;
    LBK_OUTPUT_LIST(OUTPUT_FILE_)
#undef OUTPUT_FILE_
}

/* "query,p0,p1,...\n" for `classes` columns, malloc'd; NULL when out of
 * memory. */
static char *probabilities_header(int classes, size_t *len)
{
    const size_t cap = 8 + (size_t)classes * 14;
    char *h = malloc(cap);
    if (!h)
        return NULL;
    size_t n = (size_t)snprintf(h, cap, "query");
    for (int c = 0; c < classes; c++)
        n += (size_t)snprintf(h + n, cap - n, ",p%d", c);
    n += (size_t)snprintf(h + n, cap - n, "\n");
    *len = n;
    return h;
}

/* Every file's header length (every rank: they place the rows), and the
 * creator's header bytes. */
static lbk_status write_headers(lbk_outputs *out, const lbk_output_shape *shape, bool create)
{
    unsigned char head[LBK_NPY_HEADER_MAX];
    size_t len = 0;
    lbk_status st = LBK_OK;
    out->predictions.header_len = sizeof predictions_header - 1;
    if (create && out->predictions.fd >= 0)
        LBK_TRY(write_at(&out->predictions, 0, predictions_header, sizeof predictions_header - 1));
    if (out->probabilities.fd >= 0) {
        char *ph = probabilities_header(out->classes, &len);
        LBK_FAIL_IF(!ph, LBK_ERR_NOMEM, "out of host memory for the probabilities header");
        out->probabilities.header_len = len;
        if (create)
            st = write_at(&out->probabilities, 0, ph, len);
        free(ph);
        LBK_TRY(st);
    }
    len = lbk_array_header(out->neighbors_layout, false, shape->queries, out->k, head);
    out->neighbors.header_len = len;
    if (create && out->neighbors.fd >= 0 && len > 0)
        LBK_TRY(write_at(&out->neighbors, 0, head, len));
    len = lbk_array_header(out->distances_layout, true, shape->queries, out->k, head);
    out->distances.header_len = len;
    if (create && out->distances.fd >= 0 && len > 0)
        LBK_TRY(write_at(&out->distances, 0, head, len));
    return LBK_OK;
}

lbk_status lbk_outputs_open(lbk_outputs *out, const lbk_job *job, const lbk_output_shape *shape,
                            bool create)
{
    lbk_status st = LBK_OK;
    lbk_output_file *files[LBK_OUTPUT_COUNT];
#define OUTPUT_PATH_(name) job->output.name,
    const char *const paths[LBK_OUTPUT_COUNT] = {LBK_OUTPUT_LIST(OUTPUT_PATH_)};
#undef OUTPUT_PATH_
    memset(out, 0, sizeof *out);
    list_files(out, files);
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++)
        files[i]->fd = -1;
    out->k = job->knn.k;
    out->metric = job->knn.metric;
    out->classes = shape->classes;
    out->neighbors_layout = lbk_array_layout_of(job->output.neighbors);
    out->distances_layout = lbk_array_layout_of(job->output.distances);
    /* The report is made whole at the end, by lbk_outputs_write_report. */
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++)
        if (files[i] != &out->report)
            LBK_TRY_GOTO(st, open_one(files[i], paths[i], create));
    st = write_headers(out, shape, create);
cleanup:
    if (st != LBK_OK)
        lbk_outputs_abort(out, create);
    return st;
}

bool lbk_outputs_want_predictions(const lbk_outputs *out) { return out->predictions.fd >= 0; }

bool lbk_outputs_want_probabilities(const lbk_outputs *out)
{
    return out->probabilities.fd >= 0;
}

/* One row of a result array: K values, after K as int32 in the TEXMEX
 * layout; returns the row's bytes. */
static size_t array_row(lbk_array_layout layout, int k, const void *values, unsigned char *row)
{
    size_t at = 0;
    if (layout == LBK_ARRAY_VECS) {
        const int32_t dim = k;
        memcpy(row, &dim, 4);
        at = 4;
    }
    memcpy(row + at, values, (size_t)k * 4);
    return at + (size_t)k * 4;
}

/* count rows of K values (ints or floats) into f at rows [first, ...). */
static lbk_status write_array(const lbk_output_file *f, lbk_array_layout layout, int k,
                              uint64_t first, uint64_t count, const void *values)
{
    const size_t record = (size_t)k * 4 + (layout == LBK_ARRAY_VECS ? 4 : 0);
    unsigned char *rows = malloc(record * count);
    LBK_FAIL_IF(!rows, LBK_ERR_NOMEM, "out of host memory formatting %" PRIu64 " result rows",
                count);
    for (uint64_t q = 0; q < count; q++)
        array_row(layout, k, (const char *)values + q * (uint64_t)k * 4, rows + q * record);
    const lbk_status st = write_at(f, f->header_len + first * record, rows, record * count);
    free(rows);
    return st;
}

lbk_status lbk_outputs_write_lists(lbk_outputs *out, uint64_t first, uint64_t count,
                                   const lbk_candidate *lists)
{
    lbk_status st = LBK_OK;
    const int k = out->k;
    const size_t slots = (size_t)count * (size_t)k;
    if (count == 0 || (out->neighbors.fd < 0 && out->distances.fd < 0))
        return LBK_OK;
    int32_t *ids = malloc(slots * sizeof *ids);
    float *dist = malloc(slots * sizeof *dist);
    if (!ids || !dist) {
        lbk_error("out of host memory formatting %" PRIu64 " result rows", count);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    for (size_t s = 0; s < slots; s++) {
        const lbk_candidate *c = &lists[s];
        const bool pad = c->id == UINT64_MAX;
        ids[s] = pad ? -1 : (int32_t)c->id;
        dist[s] = pad ? INFINITY : lbk_key_to_distance(out->metric, c->key);
    }
    if (out->neighbors.fd >= 0)
        LBK_TRY_GOTO(st, write_array(&out->neighbors, out->neighbors_layout, k, first, count, ids));
    if (out->distances.fd >= 0)
        st = write_array(&out->distances, out->distances_layout, k, first, count, dist);
cleanup:
    free(ids);
    free(dist);
    return st;
}

lbk_status lbk_format_predictions(uint64_t first, uint64_t count, const int32_t *labels,
                                  char **text, size_t *len)
{
    /* 20 digits of query, 11 of label, a comma and a newline. */
    const size_t cap = count * 34 + 1;
    char *buf = malloc(cap);
    size_t used = 0;
    *text = NULL;
    *len = 0;
    LBK_FAIL_IF(!buf, LBK_ERR_NOMEM, "out of host memory formatting %" PRIu64 " predictions",
                count);
    for (uint64_t q = 0; q < count; q++)
        used += (size_t)snprintf(buf + used, cap - used, "%" PRIu64 ",%" PRId32 "\n", first + q,
                                 labels[q]);
    *text = buf;
    *len = used;
    return LBK_OK;
}

lbk_status lbk_outputs_write_text(lbk_outputs *out, uint64_t offset, const char *text,
                                  size_t len)
{
    if (out->predictions.fd < 0 || len == 0)
        return LBK_OK;
    return write_at(&out->predictions, out->predictions.header_len + offset, text, len);
}

void lbk_print_probabilities(FILE *f, uint64_t query, const double *p, int classes)
{
    fprintf(f, "%" PRIu64, query);
    for (int c = 0; c < classes; c++) {
        if (p[c] == 0.0)
            fputs(",0", f);  /* most columns: short, and no "-0" */
        else
            fprintf(f, ",%.9g", p[c]);
    }
    fputc('\n', f);
}

lbk_status lbk_outputs_write_probabilities(lbk_outputs *out, uint64_t offset, const char *text,
                                           size_t len)
{
    if (out->probabilities.fd < 0 || len == 0)
        return LBK_OK;
    return write_at(&out->probabilities, out->probabilities.header_len + offset, text, len);
}

static lbk_status close_one(lbk_output_file *f)
{
    if (f->fd < 0)
        return LBK_OK;
    const int rc = close(f->fd);
    f->fd = -1;
    LBK_FAIL_IF(rc != 0, LBK_ERR_IO, "%s: closing failed: %s", f->partial, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_outputs_close(lbk_outputs *out)
{
    lbk_output_file *files[LBK_OUTPUT_COUNT];
    lbk_status st = LBK_OK;
    list_files(out, files);
    /* Every file is closed; the first failure is the one reported. */
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++) {
        const lbk_status closed = close_one(files[i]);
        st = st != LBK_OK ? st : closed;
    }
    return st;
}

lbk_status lbk_outputs_write_report(lbk_outputs *out, const char *path, const char *text,
                                    size_t len)
{
    lbk_status st = open_one(&out->report, path, true);
    if (st != LBK_OK || out->report.fd < 0)
        return st;
    st = write_at(&out->report, 0, text, len);
    const lbk_status closed = close_one(&out->report);
    return st != LBK_OK ? st : closed;
}

static lbk_status commit_one(const lbk_output_file *f)
{
    if (f->path[0] == '\0')
        return LBK_OK;
    LBK_FAIL_IF(rename(f->partial, f->path) != 0, LBK_ERR_IO,
                "%s: cannot rename %s into place: %s", f->path, f->partial, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_outputs_commit(lbk_outputs *out)
{
    /* The report goes last: a report on disk means every result is in place. */
    lbk_output_file *all[LBK_OUTPUT_COUNT], *files[LBK_OUTPUT_COUNT];
    int n = 0;
    list_files(out, all);
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++)
        if (all[i] != &out->report)
            files[n++] = all[i];
    files[n] = &out->report;
    lbk_status st = LBK_OK;
    int done = 0;
    for (; done < LBK_OUTPUT_COUNT && st == LBK_OK; done++)
        st = commit_one(files[done]);
    /* A rename that failed midway must not leave the earlier results behind
     * as if the run had succeeded. */
    if (st != LBK_OK)
        for (int i = 0; i < done - 1; i++)
            if (files[i]->path[0])
                unlink(files[i]->path);
    return st;
}

void lbk_outputs_abort(lbk_outputs *out, bool remove_files)
{
    lbk_output_file *files[LBK_OUTPUT_COUNT];
    list_files(out, files);
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++) {
        if (files[i]->fd >= 0) {
            close(files[i]->fd);
            files[i]->fd = -1;
        }
        if (remove_files && files[i]->partial[0])
            unlink(files[i]->partial);
    }
}
