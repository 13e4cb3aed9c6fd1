/* Regression targets in files of their own: one float per point, read as
 * float64 (task regress). NumPy arrays of float32 or float64, text with one
 * number per line, TEXMEX .fvecs records of dimension 1; a CSV column of
 * the points file is format_csv.c's. Every value must be finite. */
#include "format_io.h"

#include "alloc_large.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>

static lbk_status unknown_format(const char *path)
{
    lbk_error("%s: targets are read from .npy (float32 or float64), .txt (one number per "
              "line) or .fvecs (dimension 1) files, or a CSV column (target_column)",
              path);
    return LBK_ERR_INPUT;
}

static lbk_status text_probe(const char *path, uint64_t *rows)
{
    lbk_fmt_line_reader lines;
    char *line = NULL;
    uint64_t n = 0;
    lbk_status st = lbk_fmt_lines_open(&lines, path);
    if (st == LBK_OK)
        st = lbk_fmt_lines_next(&lines, &line);
    while (st == LBK_OK && line) {
        n++;
        st = lbk_fmt_lines_next(&lines, &line);
    }
    lbk_fmt_lines_close(&lines);
    *rows = n;
    return st;
}

static lbk_status text_read(const char *path, uint64_t lo, uint64_t hi, double *targets)
{
    lbk_fmt_line_reader lines;
    char *line = NULL;
    lbk_status st = lbk_fmt_lines_open(&lines, path);
    for (uint64_t row = 0; st == LBK_OK && row < hi; row++) {
        st = lbk_fmt_lines_next(&lines, &line);
        if (st == LBK_OK && !line) {
            lbk_error("%s: file ended at target %llu, before target %llu (changed while "
                      "reading?)",
                      path, (unsigned long long)row, (unsigned long long)hi);
            st = LBK_ERR_INPUT;
        }
        if (st == LBK_OK && row >= lo)
            st =
                lbk_fmt_parse_target(path, lines.line, 0, lbk_fmt_trim(line), &targets[row - lo]);
    }
    lbk_fmt_lines_close(&lines);
    return st;
}

static lbk_status fvecs_probe(const char *path, uint64_t *rows)
{
    int dim = 0;
    LBK_TRY(lbk_texmex_probe(path, LBK_FORMAT_FVECS, rows, &dim));
    LBK_FAIL_IF(dim != 1, LBK_ERR_INPUT, "%s:1: a targets file has dimension 1, this one has %d",
                path, dim);
    return LBK_OK;
}

/* Through float32 (what the file holds), widened exactly. */
static lbk_status fvecs_read(const char *path, uint64_t lo, uint64_t hi, double *targets)
{
    lbk_status st = LBK_OK;
    if (lo == hi)
        return LBK_OK;
    float *values = lbk_alloc_large_logged(hi - lo, sizeof *values, "targets", &st);
    if (st == LBK_OK)
        st = lbk_texmex_read(path, LBK_FORMAT_FVECS, 1, lo, hi, LBK_DTYPE_FLOAT32, values, NULL);
    for (uint64_t i = 0; st == LBK_OK && i < hi - lo; i++)
        targets[i] = values[i];
    lbk_alloc_large_free(values);
    return st;
}

lbk_status lbk_targets_probe(const char *path, uint64_t *rows)
{
    switch (lbk_dataset_format_from_path(path)) {
    case LBK_FORMAT_NPY: return lbk_npy_targets_probe(path, rows);
    case LBK_FORMAT_TEXT: return text_probe(path, rows);
    case LBK_FORMAT_FVECS: return fvecs_probe(path, rows);
    default: return unknown_format(path);
    }
}

lbk_status lbk_targets_read(const char *path, uint64_t lo, uint64_t hi, double *targets)
{
    switch (lbk_dataset_format_from_path(path)) {
    case LBK_FORMAT_NPY: return lbk_npy_targets_read(path, lo, hi, targets);
    case LBK_FORMAT_TEXT: return text_read(path, lo, hi, targets);
    case LBK_FORMAT_FVECS: return fvecs_read(path, lo, hi, targets);
    default: return unknown_format(path);
    }
}
