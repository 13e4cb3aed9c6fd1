/* The dataset module's front: format resolution, probing a source (points
 * plus labels), reading a row range of it, and the writers' dispatch. The
 * formats themselves live in format_*.c. */
#include "dataset_read.h"

#include "alloc_large.h"
#include "format_io.h"
#include "log.h"
#include "try.h"

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

/* Every format's file names, in LBK_FORMAT_LIST order (the order messages
 * list them in): ext is the extension written (generate's file names, the
 * one a name is known by), also a second one read as the format. IDX is
 * also read as MNIST names it ("-ubyte", "idx3-ubyte") and gzip-compressed
 * (".gz"; lbk_dataset_format_from_path). generate: `lbknn generate --format` writes
 * it. */
static const struct {
    lbk_format format;
    const char *ext, *also;
    bool generate;
} formats[] = {
    {LBK_FORMAT_FVECS, ".fvecs", NULL, true},  {LBK_FORMAT_IVECS, ".ivecs", NULL, false},
    {LBK_FORMAT_BVECS, ".bvecs", NULL, true},  {LBK_FORMAT_CSV, ".csv", ".tsv", true},
    {LBK_FORMAT_IDX, ".idx", NULL, true},      {LBK_FORMAT_TEXT, ".txt", ".labels", false},
    {LBK_FORMAT_NPY, ".npy", NULL, true},      {LBK_FORMAT_FBIN, ".fbin", NULL, true},
    {LBK_FORMAT_U8BIN, ".u8bin", NULL, false}, {LBK_FORMAT_I8BIN, ".i8bin", NULL, false},
    {LBK_FORMAT_IBIN, ".ibin", NULL, false},   {LBK_FORMAT_HDF5, ".hdf5", ".h5", false},
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

const char *lbk_dataset_format_extension(lbk_format format)
{
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (formats[i].format == format)
            return formats[i].ext;
    return "";
}

bool lbk_dataset_format_generated(lbk_format format)
{
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (formats[i].format == format)
            return formats[i].generate;
    return false;
}

void lbk_dataset_format_generated_names(const char *sep, const char *last_sep, char *buf,
                                        unsigned size)
{
    lbk_enum_item items[FORMAT_COUNT + 1];
    size_t n = 0;
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (formats[i].generate)
            items[n++] = (lbk_enum_item){lbk_format_name(formats[i].format), formats[i].format};
    items[n] = (lbk_enum_item){NULL, 0};
    lbk_enum_join(items, sep, last_sep, buf, size);
}

lbk_format lbk_dataset_format_from_path(const char *path)
{
    size_t len = strlen(path);
    const bool gz = ends_with(path, len, ".gz");
    if (gz)
        len -= 3;
    /* MNIST names: train-images-idx3-ubyte, t10k-labels.idx1-ubyte */
    if (ends_with(path, len, "ubyte"))
        return LBK_FORMAT_IDX;
    lbk_format found = LBK_FORMAT_AUTO;
    for (size_t i = 0; i < FORMAT_COUNT && found == LBK_FORMAT_AUTO; i++)
        if (ends_with(path, len, formats[i].ext) ||
            (formats[i].also && ends_with(path, len, formats[i].also)))
            found = formats[i].format;
    /* Only IDX is read compressed. */
    return gz && found != LBK_FORMAT_IDX ? LBK_FORMAT_AUTO : found;
}

/* given, or the format the name implies. The message lists the formats to
 * give: those of the table `formats` (after AUTO). */
static lbk_status resolve(const char *path, lbk_format given, const char *what,
                          const lbk_enum_item *formats, lbk_format *out)
{
    *out = given != LBK_FORMAT_AUTO ? given : lbk_dataset_format_from_path(path);
    if (*out == LBK_FORMAT_AUTO) {
        char names[128];
        lbk_fmt_join_names(formats, ", ", names, sizeof names);
        lbk_error("%s: cannot tell the %s format from the file name; give the format "
                  "explicitly (%s)",
                  path, what, names);
        return LBK_ERR_INPUT;
    }
    return LBK_OK;
}

/* Points files: the points formats; label files: every format there is
 * (the message has always listed them all). */
static lbk_status resolve_points(const char *path, lbk_format given, lbk_format *out)
{
    return resolve(path, given, "points", lbk_job_points_formats, out);
}

static lbk_status resolve_labels(const char *path, lbk_format given, lbk_format *out)
{
    return resolve(path, given, "labels", lbk_format_items, out);
}

/* A missing file, a directory or one that cannot be read is said as such
 * before its name is looked at for a format: "cannot tell the format"
 * would send the user looking in the wrong place. */
static lbk_status check_readable(const char *path)
{
    FILE *f = NULL;
    LBK_TRY(lbk_fmt_open_read(path, &f));
    fclose(f);
    return LBK_OK;
}

static lbk_status probe_points(const lbk_job_input_spec *spec, lbk_dataset_info *info)
{
    const char *path = spec->path;
    switch (info->format) {
    case LBK_FORMAT_FVECS:
    case LBK_FORMAT_IVECS:
    case LBK_FORMAT_BVECS: return lbk_texmex_probe(path, info->format, &info->rows, &info->dim);
    case LBK_FORMAT_CSV: return lbk_csv_probe(spec, &info->rows, &info->dim);
    case LBK_FORMAT_IDX: return lbk_idx_probe(path, false, &info->rows, &info->dim);
    case LBK_FORMAT_NPY: return lbk_npy_probe(path, false, &info->rows, &info->dim);
    case LBK_FORMAT_HDF5:
        return lbk_hdf5_probe(path, spec->dataset, false, &info->rows, &info->dim);
    case LBK_FORMAT_FBIN:
    case LBK_FORMAT_U8BIN:
    case LBK_FORMAT_I8BIN:
    case LBK_FORMAT_IBIN: return lbk_bigann_probe(path, info->format, &info->rows, &info->dim);
    default:
        lbk_error("%s: %s files hold labels, not points", path, lbk_format_name(info->format));
        return LBK_ERR_INPUT;
    }
}

/* A separate label file: its format, and one label per point. */
static lbk_status probe_label_file(const lbk_job_input_spec *spec, lbk_dataset_info *info)
{
    uint64_t count = 0;
    LBK_TRY(check_readable(spec->labels));
    LBK_TRY(resolve_labels(spec->labels, spec->labels_format, &info->labels_format));
    if (info->labels_format == LBK_FORMAT_HDF5) {
        int one = 0;
        LBK_TRY(lbk_hdf5_probe(spec->labels, spec->labels_dataset, true, &count, &one));
    } else {
        LBK_TRY(lbk_labels_probe(spec->labels, info->labels_format, &count));
    }
    LBK_FAIL_IF(count != info->rows, LBK_ERR_INPUT, "%s: %llu labels, but %s has %llu points",
                spec->labels, (unsigned long long)count, spec->path,
                (unsigned long long)info->rows);
    return LBK_OK;
}

/* A separate targets file: one target per point. */
static lbk_status probe_targets_file(const lbk_job_input_spec *spec, const lbk_dataset_info *info)
{
    uint64_t count = 0;
    LBK_TRY(check_readable(spec->targets));
    LBK_TRY(lbk_targets_probe(spec->targets, &count));
    LBK_FAIL_IF(count != info->rows, LBK_ERR_INPUT, "%s: %llu targets, but %s has %llu points",
                spec->targets, (unsigned long long)count, spec->path,
                (unsigned long long)info->rows);
    return LBK_OK;
}

lbk_status lbk_dataset_read_targets(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi,
                                    double *targets)
{
    if (spec->target_column >= 0)
        return lbk_csv_read_targets(spec, lo, hi, targets);
    return lbk_targets_read(spec->targets, lo, hi, targets);
}

lbk_status lbk_dataset_read_values(const char *path, const char *key, uint64_t rows,
                                   double *values)
{
    uint64_t n = 0;
    LBK_TRY(check_readable(path));
    LBK_TRY(lbk_targets_probe(path, &n));
    LBK_FAIL_IF(n != rows, LBK_ERR_INPUT, "%s: %s holds %llu numbers for %llu queries", key, path,
                (unsigned long long)n, (unsigned long long)rows);
    return lbk_targets_read(path, 0, rows, values);
}

lbk_status lbk_dataset_probe(const lbk_job_input_spec *spec, lbk_dataset_info *info)
{
    memset(info, 0, sizeof *info);
    const char *path = spec->path;
    const bool label_file = spec->labels[0] != '\0';

    LBK_TRY(check_readable(path));
    LBK_TRY(resolve_points(path, spec->format, &info->format));
    LBK_FAIL_IF(spec->label_column >= 0 && info->format != LBK_FORMAT_CSV, LBK_ERR_INPUT,
                "%s: a label column needs CSV input, not %s", path,
                lbk_format_name(info->format));
    LBK_FAIL_IF(spec->label_column >= 0 && label_file, LBK_ERR_INPUT,
                "%s: labels given both as column %lld and as file %s; give one", path,
                (long long)spec->label_column + 1, spec->labels);
    LBK_TRY(probe_points(spec, info));
    LBK_FAIL_IF(info->rows == 0, LBK_ERR_INPUT, "%s: holds no rows", path);
    LBK_TRY(lbk_dataset_file_type(path, spec->dataset, info->format, &info->file_type));
    LBK_TRY(lbk_dataset_resolve_type(path, spec->type, info->file_type, &info->type));
    info->has_labels = label_file || spec->label_column >= 0;
    if (label_file)
        LBK_TRY(probe_label_file(spec, info));
    LBK_FAIL_IF(spec->target_column >= 0 && info->format != LBK_FORMAT_CSV, LBK_ERR_INPUT,
                "%s: a target column needs CSV input, not %s", path,
                lbk_format_name(info->format));
    info->has_targets = spec->targets[0] || spec->target_column >= 0;
    if (spec->targets[0])
        LBK_TRY(probe_targets_file(spec, info));
    return LBK_OK;
}

/* Points, then labels from their file when they are not a CSV column. */
static lbk_status read_rows(const lbk_job_input_spec *spec, const lbk_dataset_info *info,
                            uint64_t lo, uint64_t hi, lbk_dataset *d)
{
    const lbk_dtype t = d->dtype;
    void *out = t == LBK_DTYPE_FLOAT32 ? (void *)d->points : d->raw;
    switch (info->format) {
    case LBK_FORMAT_FVECS:
    case LBK_FORMAT_IVECS:
    case LBK_FORMAT_BVECS:
        LBK_TRY(lbk_texmex_read(spec->path, info->format, d->dim, lo, hi, t, out, NULL));
        break;
    case LBK_FORMAT_CSV:
        LBK_TRY(lbk_csv_read(spec, d->dim, lo, hi, d->points,
                             spec->label_column >= 0 ? d->labels : NULL));
        break;
    case LBK_FORMAT_NPY: LBK_TRY(lbk_npy_read(spec->path, d->dim, lo, hi, t, out, NULL)); break;
    case LBK_FORMAT_HDF5:
        LBK_TRY(lbk_hdf5_read(spec->path, spec->dataset, d->dim, lo, hi, t, out, NULL));
        break;
    case LBK_FORMAT_FBIN:
    case LBK_FORMAT_U8BIN:
    case LBK_FORMAT_I8BIN:
    case LBK_FORMAT_IBIN:
        LBK_TRY(lbk_bigann_read(spec->path, info->format, d->dim, lo, hi, t, out, NULL));
        break;
    default: LBK_TRY(lbk_idx_read(spec->path, d->dim, lo, hi, t, out, NULL)); break;
    }
    if (spec->labels[0] && info->labels_format == LBK_FORMAT_HDF5)
        return lbk_hdf5_read(spec->labels, spec->labels_dataset, 1, lo, hi, LBK_DTYPE_FLOAT32,
                             NULL, d->labels);
    if (spec->labels[0])
        return lbk_labels_read(spec->labels, info->labels_format, lo, hi, d->labels);
    return LBK_OK;
}

lbk_status lbk_dataset_read(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi,
                            lbk_dataset *out)
{
    lbk_status st = LBK_OK;
    lbk_dataset_info info;
    lbk_dataset d = {0};
    memset(out, 0, sizeof *out);

    LBK_TRY(lbk_dataset_probe(spec, &info));
    LBK_FAIL_IF(lo > hi || hi > info.rows, LBK_ERR_INPUT,
                "%s: rows [%llu, %llu) requested, but the file has %llu rows", spec->path,
                (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)info.rows);
    d.rows = hi - lo;
    d.dim = info.dim;
    d.first_row = lo;
    d.dtype = info.type;
    if (d.dtype == LBK_DTYPE_FLOAT32)
        LBK_TRY_GOTO(
            st, lbk_fmt_alloc((void **)&d.points, d.rows * (uint64_t)d.dim, sizeof *d.points));
    else
        LBK_TRY_GOTO(
            st, lbk_fmt_alloc(&d.raw, d.rows * (uint64_t)d.dim, lbk_dataset_type_bytes(d.dtype)));
    if (info.has_labels)
        LBK_TRY_GOTO(st, lbk_fmt_alloc((void **)&d.labels, d.rows, sizeof *d.labels));
    /* An empty shard reads no rows: the probe has checked the headers. */
    if (lo < hi)
        LBK_TRY_GOTO(st, read_rows(spec, &info, lo, hi, &d));
    *out = d;
    memset(&d, 0, sizeof d);
cleanup:
    lbk_dataset_free(&d);
    return st;
}

lbk_status lbk_dataset_write_points(const char *path, lbk_format format, const lbk_dataset *data)
{
    LBK_TRY(resolve_points(path, format, &format));
    switch (format) {
    case LBK_FORMAT_FVECS:
    case LBK_FORMAT_IVECS:
    case LBK_FORMAT_BVECS:
        return lbk_texmex_write(path, format, data->points, NULL, data->rows, data->dim);
    case LBK_FORMAT_CSV: return lbk_csv_write(path, data);
    case LBK_FORMAT_IDX: return lbk_idx_write_points(path, data->points, data->rows, data->dim);
    case LBK_FORMAT_NPY: return lbk_npy_write(path, data->points, NULL, data->rows, data->dim);
    case LBK_FORMAT_FBIN:
    case LBK_FORMAT_U8BIN:
    case LBK_FORMAT_I8BIN:
    case LBK_FORMAT_IBIN:
        return lbk_bigann_write(path, format, data->points, NULL, data->rows, data->dim);
    default:
        lbk_error("%s: cannot write points as %s", path, lbk_format_name(format));
        return LBK_ERR_INPUT;
    }
}

lbk_status lbk_dataset_write_labels(const char *path, lbk_format format, const int32_t *labels,
                                    uint64_t rows)
{
    LBK_TRY(resolve_labels(path, format, &format));
    return lbk_labels_write(path, format, labels, rows);
}

lbk_status lbk_dataset_write_fvecs(const char *path, const float *values, uint64_t rows, int dim)
{
    return lbk_texmex_write(path, LBK_FORMAT_FVECS, values, NULL, rows, dim);
}

lbk_status lbk_dataset_write_ivecs(const char *path, const int32_t *values, uint64_t rows,
                                   int dim)
{
    return lbk_texmex_write(path, LBK_FORMAT_IVECS, NULL, values, rows, dim);
}

lbk_dataset_array_layout lbk_dataset_array_layout_of(const char *path)
{
    const lbk_format format = lbk_dataset_format_from_path(path);
    if (format == LBK_FORMAT_IBIN || format == LBK_FORMAT_FBIN)
        return LBK_ARRAY_BIN;
    if (format == LBK_FORMAT_HDF5)
        return LBK_ARRAY_HDF5;
    return format == LBK_FORMAT_NPY ? LBK_ARRAY_NPY : LBK_ARRAY_VECS;
}

size_t lbk_dataset_array_header(lbk_dataset_array_layout layout, bool floats, uint64_t rows,
                                int cols, unsigned char *buf)
{
    if (layout == LBK_ARRAY_BIN) {
        lbk_bigann_header(rows, (uint64_t)cols, buf);
        return 8;
    }
    if (layout == LBK_ARRAY_NPY)
        return lbk_npy_header(floats ? "<f4" : "<i4", rows, (uint64_t)cols, false, buf);
    return 0;
}

void lbk_dataset_free(lbk_dataset *data)
{
    if (!data)
        return;
    lbk_alloc_large_free(data->points);
    lbk_alloc_large_free(data->raw);
    lbk_alloc_large_free(data->labels);
    lbk_alloc_large_free(data->ids);
    lbk_alloc_large_free(data->ids32);
    memset(data, 0, sizeof *data);
}
