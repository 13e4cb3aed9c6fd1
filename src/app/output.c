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

lbk_status lbk_outputs_open(lbk_outputs *out, const lbk_job *job, bool create)
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
    /* The report is made whole at the end, by lbk_outputs_write_report. */
    for (int i = 0; i < LBK_OUTPUT_COUNT; i++)
        if (files[i] != &out->report)
            LBK_TRY_GOTO(st, open_one(files[i], paths[i], create));
    if (create && out->predictions.fd >= 0)
        st = write_at(&out->predictions, 0, predictions_header, sizeof predictions_header - 1);
cleanup:
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
