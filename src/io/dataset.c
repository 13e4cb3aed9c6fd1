/* The dataset module's front: format resolution, probing a source (points
 * plus labels), reading a row range of it, and the writers' dispatch. The
 * formats themselves live in format_*.c. */
#include "dataset.h"

#include "format_io.h"
#include "log.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[len - n + i]) != suffix[i])
            return false;
    return true;
}

lbk_format lbk_format_from_path(const char *path)
{
    size_t len = strlen(path);
    bool gz = ends_with(path, len, ".gz");
    if (gz)
        len -= 3;
    /* MNIST names: train-images-idx3-ubyte, t10k-labels.idx1-ubyte, x.idx */
    if (ends_with(path, len, "ubyte") || ends_with(path, len, ".idx"))
        return LBK_FORMAT_IDX;
    if (gz)
        return LBK_FORMAT_AUTO;  /* only IDX is read compressed */
    static const struct {
        const char *ext;
        lbk_format format;
    } table[] = {
        {".fvecs", LBK_FORMAT_FVECS}, {".ivecs", LBK_FORMAT_IVECS}, {".bvecs", LBK_FORMAT_BVECS},
        {".csv", LBK_FORMAT_CSV},     {".tsv", LBK_FORMAT_CSV},     {".txt", LBK_FORMAT_TEXT},
        {".labels", LBK_FORMAT_TEXT},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (ends_with(path, len, table[i].ext))
            return table[i].format;
    return LBK_FORMAT_AUTO;
}

static lbk_status resolve(const char *path, lbk_format given, const char *what, lbk_format *out)
{
    lbk_status st = LBK_OK;
    *out = given != LBK_FORMAT_AUTO ? given : lbk_format_from_path(path);
    if (*out == LBK_FORMAT_AUTO) {
        lbk_error("%s: cannot tell the %s format from the file name; give the format "
                  "explicitly (fvecs, ivecs, bvecs, csv, idx%s)",
                  path, what, strcmp(what, "labels") == 0 ? ", text" : "");
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
cleanup:
    return st;
}

lbk_status lbk_source_probe(const lbk_input_spec *spec, lbk_source_info *info)
{
    lbk_status st = LBK_OK;
    memset(info, 0, sizeof *info);
    const char *path = spec->path;
    const bool label_file = spec->labels[0] != '\0';

    st = resolve(path, spec->format, "points", &info->format);
    if (st != LBK_OK)
        goto cleanup;
    if (spec->label_column >= 0 && info->format != LBK_FORMAT_CSV) {
        lbk_error("%s: a label column needs CSV input, not %s", path,
                  lbk_format_name(info->format));
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (spec->label_column >= 0 && label_file) {
        lbk_error("%s: labels given both as column %lld and as file %s; give one", path,
                  (long long)spec->label_column + 1, spec->labels);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    switch (info->format) {
    case LBK_FORMAT_FVECS:
    case LBK_FORMAT_IVECS:
    case LBK_FORMAT_BVECS:
        st = lbk_texmex_probe(path, info->format, &info->rows, &info->dim);
        break;
    case LBK_FORMAT_CSV: st = lbk_csv_probe(spec, &info->rows, &info->dim); break;
    case LBK_FORMAT_IDX: st = lbk_idx_probe(path, false, &info->rows, &info->dim); break;
    default:
        lbk_error("%s: %s files hold labels, not points", path, lbk_format_name(info->format));
        st = LBK_ERR_INPUT;
        break;
    }
    if (st != LBK_OK)
        goto cleanup;
    if (info->rows == 0) {
        lbk_error("%s: holds no rows", path);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    info->has_labels = label_file || spec->label_column >= 0;
    if (label_file) {
        uint64_t count = 0;
        st = resolve(spec->labels, spec->labels_format, "labels", &info->labels_format);
        if (st != LBK_OK)
            goto cleanup;
        st = lbk_labels_probe(spec->labels, info->labels_format, &count);
        if (st != LBK_OK)
            goto cleanup;
        if (count != info->rows) {
            lbk_error("%s: %llu labels, but %s has %llu points", spec->labels,
                      (unsigned long long)count, path, (unsigned long long)info->rows);
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
    }
cleanup:
    return st;
}

/* Points, then labels from their file when they are not a CSV column. */
static lbk_status read_rows(const lbk_input_spec *spec, const lbk_source_info *info,
                            uint64_t lo, uint64_t hi, lbk_dataset *d)
{
    lbk_status st = LBK_OK;
    switch (info->format) {
    case LBK_FORMAT_FVECS:
    case LBK_FORMAT_IVECS:
    case LBK_FORMAT_BVECS:
        st = lbk_texmex_read(spec->path, info->format, d->dim, lo, hi, d->points, NULL);
        break;
    case LBK_FORMAT_CSV:
        st = lbk_csv_read(spec, d->dim, lo, hi, d->points,
                          spec->label_column >= 0 ? d->labels : NULL);
        break;
    default: st = lbk_idx_read(spec->path, lo, hi, d->points, NULL); break;
    }
    if (st != LBK_OK)
        goto cleanup;
    if (spec->labels[0])
        st = lbk_labels_read(spec->labels, info->labels_format, lo, hi, d->labels);
cleanup:
    return st;
}

lbk_status lbk_source_read(const lbk_input_spec *spec, uint64_t lo, uint64_t hi,
                           lbk_dataset *out)
{
    lbk_status st = LBK_OK;
    lbk_source_info info;
    lbk_dataset d = {0};
    memset(out, 0, sizeof *out);

    st = lbk_source_probe(spec, &info);
    if (st != LBK_OK)
        goto cleanup;
    if (lo > hi || hi > info.rows) {
        lbk_error("%s: rows [%llu, %llu) requested, but the file has %llu rows", spec->path,
                  (unsigned long long)lo, (unsigned long long)hi,
                  (unsigned long long)info.rows);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    d.rows = hi - lo;
    d.dim = info.dim;
    d.first_row = lo;
    st = lbk_fmt_alloc((void **)&d.points, d.rows * (uint64_t)d.dim, sizeof *d.points);
    if (st != LBK_OK)
        goto cleanup;
    if (info.has_labels) {
        st = lbk_fmt_alloc((void **)&d.labels, d.rows, sizeof *d.labels);
        if (st != LBK_OK)
            goto cleanup;
    }
    /* An empty shard reads no rows: the probe has checked the headers. */
    if (lo < hi) {
        st = read_rows(spec, &info, lo, hi, &d);
        if (st != LBK_OK)
            goto cleanup;
    }
    *out = d;
    memset(&d, 0, sizeof d);
cleanup:
    lbk_dataset_free(&d);
    return st;
}

lbk_status lbk_write_points(const char *path, lbk_format format, const lbk_dataset *data)
{
    lbk_status st = LBK_OK;
    st = resolve(path, format, "points", &format);
    if (st != LBK_OK)
        goto cleanup;
    switch (format) {
    case LBK_FORMAT_FVECS:
    case LBK_FORMAT_IVECS:
    case LBK_FORMAT_BVECS:
        st = lbk_texmex_write(path, format, data->points, NULL, data->rows, data->dim);
        break;
    case LBK_FORMAT_CSV: st = lbk_csv_write(path, data); break;
    case LBK_FORMAT_IDX: st = lbk_idx_write_points(path, data->points, data->rows, data->dim); break;
    default:
        lbk_error("%s: cannot write points as %s", path, lbk_format_name(format));
        st = LBK_ERR_INPUT;
        break;
    }
cleanup:
    return st;
}

lbk_status lbk_write_labels(const char *path, lbk_format format, const int32_t *labels,
                            uint64_t rows)
{
    lbk_status st = LBK_OK;
    st = resolve(path, format, "labels", &format);
    if (st != LBK_OK)
        goto cleanup;
    st = lbk_labels_write(path, format, labels, rows);
cleanup:
    return st;
}

lbk_status lbk_write_fvecs(const char *path, const float *values, uint64_t rows, int dim)
{
    return lbk_texmex_write(path, LBK_FORMAT_FVECS, values, NULL, rows, dim);
}

lbk_status lbk_write_ivecs(const char *path, const int32_t *values, uint64_t rows, int dim)
{
    return lbk_texmex_write(path, LBK_FORMAT_IVECS, NULL, values, rows, dim);
}

void lbk_dataset_free(lbk_dataset *data)
{
    if (!data)
        return;
    free(data->points);
    free(data->labels);
    memset(data, 0, sizeof *data);
}
