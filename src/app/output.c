#include "output.h"

#include "log.h"
#include "try.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char predictions_header[] = "query,label\n";

static lbk_status write_at(lbk_output_file *f, uint64_t offset, const void *data, size_t len)
{
    return lbk_outfile_write_at(f, offset, data, len);
}

/* out's files in LBK_OUTPUT_LIST order. */
static void list_files(lbk_outputs *out, lbk_output_file *files[LBK_OUTPUT_COUNT])
{
    int n = 0;
#define OUTPUT_FILE_(name) files[n++] = &out->name;
    LBK_OUTPUT_LIST(OUTPUT_FILE_)
#undef OUTPUT_FILE_
}

/* Output names in LBK_OUTPUT_LIST order, for messages. */
static const char *const output_names[LBK_OUTPUT_COUNT] = {
#define OUTPUT_NAME_(name) "output." #name,
    LBK_OUTPUT_LIST(OUTPUT_NAME_)
#undef OUTPUT_NAME_
};

static lbk_status open_all(lbk_outputs *out, const lbk_job *job, bool create, bool shared)
{
    lbk_output_file *files[LBK_OUTPUT_COUNT];
#define OUTPUT_PATH_(name) job->output.name,
    const char *const paths[LBK_OUTPUT_COUNT] = {LBK_OUTPUT_LIST(OUTPUT_PATH_)};
#undef OUTPUT_PATH_
    list_files(out, files);
    /* The report is made whole at the end, by lbk_outputs_write_report. */
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++) {
        if (files[i] == &out->report || paths[i][0] == '\0')
            continue;
        if (create)
            LBK_TRY(lbk_outfile_create(files[i], paths[i], output_names[i], shared));
        else
            LBK_TRY(lbk_outfile_join(files[i]));
    }
    if (create && out->predictions.fd >= 0)
        return write_at(&out->predictions, 0, predictions_header, sizeof predictions_header - 1);
    return LBK_OK;
}

lbk_status lbk_outputs_open(lbk_outputs *out, const lbk_job *job, bool create, bool shared)
{
    lbk_output_file *files[LBK_OUTPUT_COUNT];
    if (create) {
        memset(out, 0, sizeof *out);
        out->k = job->knn.k;
        out->metric = job->knn.metric;
    }
    list_files(out, files);
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++)
        files[i]->fd = -1;
    const lbk_status st = open_all(out, job, create, shared);
    if (st != LBK_OK)
        lbk_outputs_abort(out, create);
    return st;
}

bool lbk_outputs_want_predictions(const lbk_outputs *out) { return out->predictions.fd >= 0; }

lbk_status lbk_outputs_write_lists(lbk_outputs *out, uint64_t first, uint64_t count,
                                   const lbk_candidate *lists)
{
    lbk_status st = LBK_OK;
    const int k = out->k;
    const size_t record = (size_t)(k + 1) * 4;
    int32_t *ids = NULL;
    float *dist = NULL;
    if (count == 0 || (out->neighbors.fd < 0 && out->distances.fd < 0))
        return LBK_OK;
    ids = malloc(record * count);
    dist = malloc(record * count);
    if (!ids || !dist) {
        lbk_error("out of host memory formatting %" PRIu64 " result rows", count);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    for (uint64_t q = 0; q < count; q++) {
        int32_t *irow = ids + q * (uint64_t)(k + 1);
        float *drow = dist + q * (uint64_t)(k + 1);
        /* The .ivecs/.fvecs record header is the dimension as int32 in both. */
        irow[0] = k;
        memcpy(&drow[0], &irow[0], 4);
        for (int s = 0; s < k; s++) {
            const lbk_candidate *c = &lists[q * (uint64_t)k + (uint64_t)s];
            const bool pad = c->id == UINT64_MAX;
            irow[s + 1] = pad ? -1 : (int32_t)c->id;
            drow[s + 1] = pad ? INFINITY : lbk_key_to_distance(out->metric, c->key);
        }
    }
    if (out->neighbors.fd >= 0 &&
        (st = write_at(&out->neighbors, first * record, ids, record * count)) != LBK_OK)
        goto cleanup;
    if (out->distances.fd >= 0)
        st = write_at(&out->distances, first * record, dist, record * count);
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
    return write_at(&out->predictions, sizeof predictions_header - 1 + offset, text, len);
}

static lbk_status close_one(lbk_output_file *f) { return lbk_outfile_close(f); }

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
    lbk_output_file *f = &out->report;
    f->fd = -1;
    if (path[0] == '\0')
        return LBK_OK;
    lbk_status st = lbk_outfile_create(f, path, "output.report", false);
    if (st != LBK_OK)
        return st;
    st = write_at(f, 0, text, len);
    const lbk_status closed = close_one(f);
    return st != LBK_OK ? st : closed;
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
    return lbk_outfile_commit(files, LBK_OUTPUT_COUNT);
}

void lbk_outputs_abort(lbk_outputs *out, bool remove_files)
{
    lbk_output_file *files[LBK_OUTPUT_COUNT];
    list_files(out, files);
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++)
        lbk_outfile_discard(files[i], remove_files);
}
