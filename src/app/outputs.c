#include "outputs.h"

#include "log.h"
#include "try.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char predictions_header[] = "query,label\n";
static const char values_header[] = "query,value\n"; /* task regress */

static lbk_status write_at(lbk_outputs_file *f, uint64_t offset, const void *data, size_t len)
{
    return lbk_outfile_write_at(&f->file, offset, data, len);
}

/* out's files in LBK_JOB_OUTPUT_LIST order. */
static void list_files(lbk_outputs *out, lbk_outputs_file *files[LBK_JOB_OUTPUT_COUNT])
{
    int n = 0;
#define OUTPUT_FILE_(name) files[n++] = &out->name;
    LBK_JOB_OUTPUT_LIST(OUTPUT_FILE_)
#undef OUTPUT_FILE_
}

/* Output names in LBK_JOB_OUTPUT_LIST order, for messages. */
static const char *const output_names[LBK_JOB_OUTPUT_COUNT] = {
#define OUTPUT_NAME_(name) "output." #name,
    LBK_JOB_OUTPUT_LIST(OUTPUT_NAME_)
#undef OUTPUT_NAME_
};

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

/* An HDF5 result file (creator): libhdf5 lays the file out; the rows go to
 * the dataset's offset, which becomes the "header" length that every rank
 * receives with `out` (docs/design.md, "HDF5 outputs"). */
static lbk_status create_hdf5(lbk_outputs_file *f, const char *what, const char *dataset,
                              bool floats, size_t value_bytes, const lbk_outputs_shape *shape,
                              int k)
{
    uint64_t offset = 0;
    LBK_FAIL_IF(f->file.direct || f->file.unnamed, LBK_ERR_INTERNAL,
                "%s: internal: %s is not a named partial file", f->file.path, what);
    LBK_TRY(lbk_hdf5_array_create(lbk_outfile_write_path(&f->file), dataset, floats, value_bytes,
                                  shape->queries, k, &offset));
    f->header_len = (size_t)offset;
    return LBK_OK;
}

/* A neighbours or distances array's header (length on every rank, bytes by
 * the creator); HDF5: the creator makes the file, the others keep the
 * offset it found. */
static lbk_status array_header(lbk_outputs_file *f, lbk_dataset_array_layout layout, bool floats,
                               const lbk_outputs *out, const lbk_outputs_shape *shape,
                               bool create)
{
    unsigned char head[LBK_DATASET_NPY_HEADER_MAX];
    if (layout == LBK_ARRAY_HDF5) {
        /* header_len already: a kept file, laid out by the run before. */
        if (!create || f->file.fd < 0 || f->header_len > 0)
            return LBK_OK;
        return floats ? create_hdf5(f, "output.distances", "distances", true, 4, shape, out->k)
                      : create_hdf5(f, "output.neighbors", "neighbors", false, out->id_bytes,
                                    shape, out->k);
    }
    const size_t len = lbk_dataset_array_header(layout, floats, shape->queries, out->k, head);
    f->header_len = len;
    if (create && f->file.fd >= 0 && len > 0)
        LBK_TRY(write_at(f, 0, head, len));
    return LBK_OK;
}

/* Every file's header length (every rank: they place the rows), and the
 * creator's header bytes. */
static lbk_status write_headers(lbk_outputs *out, const lbk_outputs_shape *shape, bool create)
{
    size_t len = 0;
    lbk_status st = LBK_OK;
    const char *header = out->values ? values_header : predictions_header;
    out->predictions.header_len = strlen(header);
    if (create && out->predictions.file.fd >= 0)
        LBK_TRY(write_at(&out->predictions, 0, header, out->predictions.header_len));
    if (out->probabilities.file.fd >= 0) {
        char *ph = probabilities_header(out->classes, &len);
        LBK_FAIL_IF(!ph, LBK_ERR_NOMEM, "out of host memory for the probabilities header");
        out->probabilities.header_len = len;
        if (create)
            st = write_at(&out->probabilities, 0, ph, len);
        free(ph);
        LBK_TRY(st);
    }
    LBK_TRY(array_header(&out->neighbors, out->neighbors_layout, false, out, shape, create));
    return array_header(&out->distances, out->distances_layout, true, out, shape, create);
}

static bool is_hdf5(const lbk_outputs *out, const lbk_outputs_file *f)
{
    return (f == &out->neighbors && out->neighbors_layout == LBK_ARRAY_HDF5) ||
           (f == &out->distances && out->distances_layout == LBK_ARRAY_HDF5);
}

static lbk_status open_all(lbk_outputs *out, const lbk_job *job, const lbk_outputs_shape *shape,
                           bool create, bool shared, const uint64_t *keep,
                           const uint64_t *hdf5_offset)
{
    lbk_outputs_file *files[LBK_JOB_OUTPUT_COUNT];
#define OUTPUT_PATH_(name) job->output.name,
    const char *const paths[LBK_JOB_OUTPUT_COUNT] = {LBK_JOB_OUTPUT_LIST(OUTPUT_PATH_)};
#undef OUTPUT_PATH_
    list_files(out, files);
    /* The report is made whole at the end, by lbk_outputs_write_report. */
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        if (files[i] == &out->report || paths[i][0] == '\0')
            continue;
        /* An HDF5 file kept as it is: laid out already, its rows after
         * hdf5_offset[i] (write_headers leaves it). */
        if (keep && is_hdf5(out, files[i]) && keep[i] == LBK_OUTFILE_KEEP_LENGTH)
            files[i]->header_len = (size_t)hdf5_offset[i];
        if (keep)
            LBK_TRY(lbk_outfile_create_kept(&files[i]->file, paths[i], output_names[i], keep[i]));
        else if (create && is_hdf5(out, files[i]))
            LBK_TRY(lbk_outfile_create_named(&files[i]->file, paths[i], output_names[i]));
        else if (create)
            LBK_TRY(lbk_outfile_create(&files[i]->file, paths[i], output_names[i], shared));
        else
            LBK_TRY(lbk_outfile_join(&files[i]->file));
    }
    return write_headers(out, shape, create);
}

static lbk_status open_outputs(lbk_outputs *out, const lbk_job *job,
                               const lbk_outputs_shape *shape, bool create, bool shared,
                               const uint64_t *keep, const uint64_t *hdf5_offset)
{
    lbk_outputs_file *files[LBK_JOB_OUTPUT_COUNT];
    if (create) {
        memset(out, 0, sizeof *out);
        out->k = job->knn.k;
        out->metric = job->knn.metric;
        out->classes = shape->classes;
        out->values = job->task == LBK_TASK_REGRESS;
        out->neighbors_layout = lbk_dataset_array_layout_of(job->output.neighbors);
        out->distances_layout = lbk_dataset_array_layout_of(job->output.distances);
        /* Every other layout holds int32 ids (as TEXMEX and big-ann ground
         * truth do); HDF5 says the width in the file. */
        out->id_bytes =
            out->neighbors_layout == LBK_ARRAY_HDF5 && shape->references > INT32_MAX ? 8 : 4;
    }
    list_files(out, files);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        files[i]->file.fd = -1;
    const lbk_status st = open_all(out, job, shape, create, shared, keep, hdf5_offset);
    if (st != LBK_OK)
        lbk_outputs_abort(out, create && !keep);
    return st;
}

lbk_status lbk_outputs_open(lbk_outputs *out, const lbk_job *job, const lbk_outputs_shape *shape,
                            bool create, bool shared)
{
    return open_outputs(out, job, shape, create, shared, NULL, NULL);
}

lbk_status lbk_outputs_open_kept(lbk_outputs *out, const lbk_job *job,
                                 const lbk_outputs_shape *shape,
                                 const uint64_t keep[LBK_JOB_OUTPUT_COUNT],
                                 const uint64_t hdf5_offset[LBK_JOB_OUTPUT_COUNT])
{
    return open_outputs(out, job, shape, true, false, keep, hdf5_offset);
}

uint64_t lbk_outputs_header_len(const lbk_outputs *out, int i)
{
    if (strcmp(output_names[i], "output.neighbors") == 0)
        return out->neighbors.header_len;
    return strcmp(output_names[i], "output.distances") == 0 ? out->distances.header_len : 0;
}

void lbk_outputs_files(lbk_outputs *out, lbk_outfile *files[LBK_JOB_OUTPUT_COUNT])
{
    lbk_outputs_file *all[LBK_JOB_OUTPUT_COUNT];
    list_files(out, all);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        files[i] = &all[i]->file;
}

const char *lbk_outputs_key(int i) { return output_names[i]; }

bool lbk_outputs_want_predictions(const lbk_outputs *out)
{
    return out->predictions.file.fd >= 0;
}

bool lbk_outputs_want_probabilities(const lbk_outputs *out)
{
    return out->probabilities.file.fd >= 0;
}

/* One row of a result array: K values of `bytes` each, after K as int32 in
 * the TEXMEX layout; returns the row's bytes. */
static size_t array_row(lbk_dataset_array_layout layout, int k, size_t bytes, const void *values,
                        unsigned char *row)
{
    size_t at = 0;
    if (layout == LBK_ARRAY_VECS) {
        const int32_t dim = k;
        memcpy(row, &dim, 4);
        at = 4;
    }
    memcpy(row + at, values, (size_t)k * bytes);
    return at + (size_t)k * bytes;
}

/* count rows of K values (ints or floats, `bytes` each) into f at rows
 * [first, ...). */
static lbk_status write_array(lbk_outputs_file *f, lbk_dataset_array_layout layout, int k,
                              size_t bytes, uint64_t first, uint64_t count, const void *values)
{
    const size_t record = (size_t)k * bytes + (layout == LBK_ARRAY_VECS ? 4 : 0);
    unsigned char *rows = malloc(record * count);
    LBK_FAIL_IF(!rows, LBK_ERR_NOMEM, "out of host memory formatting %" PRIu64 " result rows",
                count);
    for (uint64_t q = 0; q < count; q++)
        array_row(layout, k, bytes, (const char *)values + q * (uint64_t)k * bytes,
                  rows + q * record);
    const lbk_status st = write_at(f, f->header_len + first * record, rows, record * count);
    free(rows);
    return st;
}

bool lbk_outputs_rows_span(const lbk_job *job, const lbk_outputs_shape *shape, int i,
                           uint64_t first, uint64_t count, uint64_t *offset, uint64_t *len)
{
    unsigned char head[LBK_DATASET_NPY_HEADER_MAX];
    const char *key = output_names[i];
    const bool floats = strcmp(key, "output.distances") == 0;
    if (!floats && strcmp(key, "output.neighbors") != 0)
        return false;
    const lbk_dataset_array_layout layout =
        lbk_dataset_array_layout_of(floats ? job->output.distances : job->output.neighbors);
    const int k = job->knn.k;
    if (layout == LBK_ARRAY_HDF5) { /* as open_outputs's id_bytes; from the dataset's offset */
        const uint64_t bytes = floats || shape->references <= INT32_MAX ? 4 : 8;
        *offset = shape->hdf5_offset[i] + first * (uint64_t)k * bytes;
        *len = count * (uint64_t)k * bytes;
        return true;
    }
    /* As write_array's rows: int32 ids or float32 distances. */
    const uint64_t record = (uint64_t)k * 4 + (layout == LBK_ARRAY_VECS ? 4 : 0);
    *offset = lbk_dataset_array_header(layout, floats, shape->queries, k, head) + first * record;
    *len = count * record;
    return true;
}

lbk_status lbk_outputs_write_lists(lbk_outputs *out, uint64_t first, uint64_t count,
                                   const lbk_knn_candidate *lists)
{
    lbk_status st = LBK_OK;
    const int k = out->k;
    const size_t slots = (size_t)count * (size_t)k;
    if (count == 0 || (out->neighbors.file.fd < 0 && out->distances.file.fd < 0))
        return LBK_OK;
    const bool wide = out->id_bytes == 8;
    int32_t *ids = wide ? NULL : malloc(slots * sizeof *ids);
    int64_t *ids64 = wide ? malloc(slots * sizeof *ids64) : NULL;
    float *dist = malloc(slots * sizeof *dist);
    if ((!ids && !ids64) || !dist) {
        lbk_error("out of host memory formatting %" PRIu64 " result rows", count);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    for (size_t s = 0; s < slots; s++) {
        const lbk_knn_candidate *c = &lists[s];
        const bool pad = c->id == UINT64_MAX;
        if (wide)
            ids64[s] = pad ? -1 : (int64_t)c->id;
        else
            ids[s] = pad ? -1 : (int32_t)c->id;
        dist[s] = pad ? INFINITY : lbk_knn_key_to_distance(out->metric, c->key);
    }
    if (out->neighbors.file.fd >= 0)
        LBK_TRY_GOTO(st,
                     write_array(&out->neighbors, out->neighbors_layout, k, out->id_bytes, first,
                                 count, wide ? (const void *)ids64 : (const void *)ids));
    if (out->distances.file.fd >= 0)
        st = write_array(&out->distances, out->distances_layout, k, 4, first, count, dist);
cleanup:
    free(ids);
    free(ids64);
    free(dist);
    return st;
}

lbk_status lbk_outputs_format_predictions(uint64_t first, uint64_t count, const int32_t *labels,
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

lbk_status lbk_outputs_format_values(uint64_t first, uint64_t count, const double *values,
                                     char **text, size_t *len)
{
    /* 20 digits of query, 24 characters of %.17g, a comma and a newline. */
    const size_t cap = count * 46 + 1;
    char *buf = malloc(cap);
    size_t used = 0;
    *text = NULL;
    *len = 0;
    LBK_FAIL_IF(!buf, LBK_ERR_NOMEM, "out of host memory formatting %" PRIu64 " predictions",
                count);
    for (uint64_t q = 0; q < count; q++)
        used +=
            (size_t)snprintf(buf + used, cap - used, "%" PRIu64 ",%.17g\n", first + q, values[q]);
    *text = buf;
    *len = used;
    return LBK_OK;
}

lbk_status lbk_outputs_write_text(lbk_outputs *out, uint64_t offset, const char *text, size_t len)
{
    if (out->predictions.file.fd < 0 || len == 0)
        return LBK_OK;
    return write_at(&out->predictions, out->predictions.header_len + offset, text, len);
}

void lbk_outputs_print_probabilities(FILE *f, uint64_t query, const double *p, int classes)
{
    fprintf(f, "%" PRIu64, query);
    for (int c = 0; c < classes; c++) {
        if (p[c] == 0.0)
            fputs(",0", f); /* most columns: short, and no "-0" */
        else
            fprintf(f, ",%.9g", p[c]);
    }
    fputc('\n', f);
}

lbk_status lbk_outputs_write_probabilities(lbk_outputs *out, uint64_t offset, const char *text,
                                           size_t len)
{
    if (out->probabilities.file.fd < 0 || len == 0)
        return LBK_OK;
    return write_at(&out->probabilities, out->probabilities.header_len + offset, text, len);
}

static lbk_status close_one(lbk_outputs_file *f) { return lbk_outfile_close(&f->file); }

lbk_status lbk_outputs_close(lbk_outputs *out)
{
    lbk_outputs_file *files[LBK_JOB_OUTPUT_COUNT];
    lbk_status st = LBK_OK;
    list_files(out, files);
    /* Every file is closed; the first failure is the one reported. */
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        const lbk_status closed = close_one(files[i]);
        st = st != LBK_OK ? st : closed;
    }
    return st;
}

lbk_status lbk_outputs_write_report(lbk_outputs *out, const char *path, const char *text,
                                    size_t len)
{
    lbk_outputs_file *f = &out->report;
    f->file.fd = -1;
    if (path[0] == '\0')
        return LBK_OK;
    LBK_TRY(lbk_outfile_create(&f->file, path, "output.report", false));
    const lbk_status st = write_at(f, 0, text, len);
    const lbk_status closed = close_one(f);
    return st != LBK_OK ? st : closed;
}

lbk_status lbk_outputs_commit(lbk_outputs *out)
{
    /* The report goes last: a report on disk means every result is in place. */
    lbk_outputs_file *all[LBK_JOB_OUTPUT_COUNT];
    lbk_outfile *files[LBK_JOB_OUTPUT_COUNT];
    int n = 0;
    list_files(out, all);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        if (all[i] != &out->report)
            files[n++] = &all[i]->file;
    files[n] = &out->report.file;
    return lbk_outfile_commit(files, LBK_JOB_OUTPUT_COUNT);
}

void lbk_outputs_abort(lbk_outputs *out, bool remove_files)
{
    lbk_outputs_file *files[LBK_JOB_OUTPUT_COUNT];
    list_files(out, files);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        lbk_outfile_discard(&files[i]->file, remove_files);
}
