/* Separate label files: ivecs records of dimension 1, IDX label files, and
 * text with one integer per line (TEXT; CSV is the same with an optional
 * header line). Labels are non-negative class numbers. */
#include "format_io.h"

#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

/* Text labels: the header line, if any, is the first line and is not an
 * integer. TEXT files never have one, so a stray word there is reported.
 * The caller closes the reader, also on failure. */
static lbk_status text_open(lbk_fmt_line_reader *lines, const char *path, lbk_format format,
                            char **line)
{
    *line = NULL;
    LBK_TRY(lbk_fmt_lines_open(lines, path));
    LBK_TRY(lbk_fmt_lines_next(lines, line));
    LBK_FAIL_IF(!*line, LBK_ERR_INPUT, "%s: empty file", path);
    if (format == LBK_FORMAT_CSV && !lbk_fmt_parse_number(lbk_fmt_trim(*line))) {
        LBK_TRY(lbk_fmt_lines_next(lines, line));
        LBK_FAIL_IF(!*line, LBK_ERR_INPUT, "%s: no labels after the header line", path);
    }
    return LBK_OK;
}

static lbk_status text_probe(const char *path, lbk_format format, uint64_t *rows)
{
    lbk_status st = LBK_OK;
    lbk_fmt_line_reader lines;
    char *line = NULL;
    uint64_t n = 0;
    st = text_open(&lines, path, format, &line);
    while (st == LBK_OK && line) {
        n++;
        st = lbk_fmt_lines_next(&lines, &line);
    }
    if (st == LBK_OK)
        *rows = n;
    lbk_fmt_lines_close(&lines);
    return st;
}

static lbk_status text_read(const char *path, lbk_format format, uint64_t lo, uint64_t hi,
                            int32_t *labels)
{
    lbk_status st = LBK_OK;
    lbk_fmt_line_reader lines;
    char *line = NULL;
    LBK_TRY_GOTO(st, text_open(&lines, path, format, &line));
    for (uint64_t row = 0; row < hi; row++) {
        if (!line) {
            lbk_error("%s: file ended at label %llu, before label %llu (changed while reading?)",
                      path, (unsigned long long)row, (unsigned long long)hi);
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
        if (row >= lo)
            LBK_TRY_GOTO(st, lbk_fmt_parse_label(path, lines.line, 0, lbk_fmt_trim(line),
                                                 &labels[row - lo]));
        if (row + 1 < hi)
            LBK_TRY_GOTO(st, lbk_fmt_lines_next(&lines, &line));
    }
cleanup:
    lbk_fmt_lines_close(&lines);
    return st;
}

lbk_status lbk_labels_probe(const char *path, lbk_format format, uint64_t *rows)
{
    int dim = 0;
    char formats[128];
    switch (format) {
    case LBK_FORMAT_IVECS:
        LBK_TRY(lbk_texmex_probe(path, format, rows, &dim));
        LBK_FAIL_IF(dim != 1, LBK_ERR_INPUT,
                    "%s:1: a label file has dimension 1, this one has %d", path, dim);
        return LBK_OK;
    case LBK_FORMAT_IDX: return lbk_idx_probe(path, true, rows, &dim);
    case LBK_FORMAT_TEXT:
    case LBK_FORMAT_CSV: return text_probe(path, format, rows);
    case LBK_FORMAT_NPY: return lbk_npy_probe(path, true, rows, &dim);
    case LBK_FORMAT_IBIN:
        LBK_TRY(lbk_bigann_probe(path, format, rows, &dim));
        LBK_FAIL_IF(dim != 1, LBK_ERR_INPUT, "%s: a label file has dimension 1, this one has %d",
                    path, dim);
        return LBK_OK;
    default:
        lbk_fmt_join_names(lbk_job_labels_formats, " or ", formats, sizeof formats);
        lbk_error("%s: labels cannot be read as %s (use %s)", path, lbk_format_name(format),
                  formats);
        return LBK_ERR_INPUT;
    }
}

lbk_status lbk_labels_read(const char *path, lbk_format format, uint64_t lo, uint64_t hi,
                           int32_t *labels)
{
    switch (format) {
    case LBK_FORMAT_IVECS:
        LBK_TRY(lbk_texmex_read(path, format, 1, lo, hi, LBK_DTYPE_FLOAT32, NULL, labels));
        for (uint64_t i = 0; i < hi - lo; i++)
            LBK_FAIL_IF(labels[i] < 0, LBK_ERR_INPUT, "%s:%llu: negative label %d", path,
                        (unsigned long long)(lo + i + 1), (int)labels[i]);
        return LBK_OK;
    case LBK_FORMAT_IDX: return lbk_idx_read(path, 1, lo, hi, LBK_DTYPE_FLOAT32, NULL, labels);
    case LBK_FORMAT_TEXT:
    case LBK_FORMAT_CSV: return text_read(path, format, lo, hi, labels);
    case LBK_FORMAT_NPY: return lbk_npy_read(path, 1, lo, hi, LBK_DTYPE_FLOAT32, NULL, labels);
    case LBK_FORMAT_IBIN:
        return lbk_bigann_read(path, format, 1, lo, hi, LBK_DTYPE_FLOAT32, NULL, labels);
    default:
        lbk_error("%s: labels cannot be read as %s", path, lbk_format_name(format));
        return LBK_ERR_INPUT;
    }
}

/* One integer per line (TEXT, and CSV without a header). */
static lbk_status write_text(const char *path, const int32_t *labels, uint64_t rows)
{
    FILE *file = NULL;
    LBK_TRY(lbk_fmt_open_write(path, &file));
    for (uint64_t i = 0; i < rows && !ferror(file); i++)
        fprintf(file, "%d\n", (int)labels[i]);
    return lbk_fmt_close_write(file, path);
}

lbk_status lbk_labels_write(const char *path, lbk_format format, const int32_t *labels,
                            uint64_t rows)
{
    switch (format) {
    case LBK_FORMAT_IVECS: return lbk_texmex_write(path, format, NULL, labels, rows, 1);
    case LBK_FORMAT_IDX: return lbk_idx_write_labels(path, labels, rows);
    case LBK_FORMAT_TEXT:
    case LBK_FORMAT_CSV: return write_text(path, labels, rows);
    case LBK_FORMAT_NPY: return lbk_npy_write(path, NULL, labels, rows, 1);
    case LBK_FORMAT_IBIN: return lbk_bigann_write(path, format, NULL, labels, rows, 1);
    default:
        lbk_error("%s: cannot write labels as %s", path, lbk_format_name(format));
        return LBK_ERR_INTERNAL;
    }
}
