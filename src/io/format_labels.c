/* Separate label files: ivecs records of dimension 1, IDX label files, and
 * text with one integer per line (TEXT; CSV is the same with an optional
 * header line). Labels are non-negative class numbers. */
#include "format_io.h"

#include "log.h"

#include <stdlib.h>
#include <string.h>

/* Text labels: the header line, if any, is the first line and is not an
 * integer. TEXT files never have one, so a stray word there is reported. */
static lbk_status text_open(lbk_line_reader *lines, const char *path, lbk_format format,
                            char **line)
{
    lbk_status st = LBK_OK;
    *line = NULL;
    st = lbk_lines_open(lines, path);
    if (st != LBK_OK)
        goto cleanup;
    st = lbk_lines_next(lines, line);
    if (st != LBK_OK)
        goto cleanup;
    if (!*line) {
        lbk_error("%s: empty file", path);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (format == LBK_FORMAT_CSV && !lbk_parse_number(lbk_trim(*line))) {
        st = lbk_lines_next(lines, line);
        if (st != LBK_OK)
            goto cleanup;
        if (!*line) {
            lbk_error("%s: no labels after the header line", path);
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
    }
cleanup:
    return st;
}

static lbk_status text_probe(const char *path, lbk_format format, uint64_t *rows)
{
    lbk_status st = LBK_OK;
    lbk_line_reader lines;
    char *line = NULL;
    uint64_t n = 0;
    st = text_open(&lines, path, format, &line);
    while (st == LBK_OK && line) {
        n++;
        st = lbk_lines_next(&lines, &line);
    }
    if (st == LBK_OK)
        *rows = n;
    lbk_lines_close(&lines);
    return st;
}

static lbk_status text_read(const char *path, lbk_format format, uint64_t lo, uint64_t hi,
                            int32_t *labels)
{
    lbk_status st = LBK_OK;
    lbk_line_reader lines;
    char *line = NULL;
    st = text_open(&lines, path, format, &line);
    for (uint64_t row = 0; st == LBK_OK && row < hi; row++) {
        if (!line) {
            lbk_error("%s: file ended at label %llu, before label %llu (changed while reading?)",
                      path, (unsigned long long)row, (unsigned long long)hi);
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
        if (row >= lo) {
            st = lbk_parse_label(path, lines.line, 0, lbk_trim(line), &labels[row - lo]);
            if (st != LBK_OK)
                goto cleanup;
        }
        if (row + 1 < hi)
            st = lbk_lines_next(&lines, &line);
    }
cleanup:
    lbk_lines_close(&lines);
    return st;
}

lbk_status lbk_labels_probe(const char *path, lbk_format format, uint64_t *rows)
{
    lbk_status st = LBK_OK;
    int dim = 0;
    switch (format) {
    case LBK_FORMAT_IVECS:
        st = lbk_texmex_probe(path, format, rows, &dim);
        if (st == LBK_OK && dim != 1) {
            lbk_error("%s:1: a label file has dimension 1, this one has %d", path, dim);
            st = LBK_ERR_INPUT;
        }
        break;
    case LBK_FORMAT_IDX: st = lbk_idx_probe(path, true, rows, &dim); break;
    case LBK_FORMAT_TEXT:
    case LBK_FORMAT_CSV: st = text_probe(path, format, rows); break;
    default:
        lbk_error("%s: labels cannot be read as %s (use ivecs, idx, text or csv)", path,
                  lbk_format_name(format));
        st = LBK_ERR_INPUT;
        break;
    }
    return st;
}

lbk_status lbk_labels_read(const char *path, lbk_format format, uint64_t lo, uint64_t hi,
                           int32_t *labels)
{
    lbk_status st = LBK_OK;
    switch (format) {
    case LBK_FORMAT_IVECS:
        st = lbk_texmex_read(path, format, 1, lo, hi, NULL, labels);
        for (uint64_t i = 0; st == LBK_OK && i < hi - lo; i++) {
            if (labels[i] < 0) {
                lbk_error("%s:%llu: negative label %d", path, (unsigned long long)(lo + i + 1),
                          (int)labels[i]);
                st = LBK_ERR_INPUT;
            }
        }
        break;
    case LBK_FORMAT_IDX: st = lbk_idx_read(path, lo, hi, NULL, labels); break;
    case LBK_FORMAT_TEXT:
    case LBK_FORMAT_CSV: st = text_read(path, format, lo, hi, labels); break;
    default:
        lbk_error("%s: labels cannot be read as %s", path, lbk_format_name(format));
        st = LBK_ERR_INPUT;
        break;
    }
    return st;
}

lbk_status lbk_labels_write(const char *path, lbk_format format, const int32_t *labels,
                            uint64_t rows)
{
    lbk_status st = LBK_OK;
    FILE *file = NULL;
    switch (format) {
    case LBK_FORMAT_IVECS: st = lbk_texmex_write(path, format, NULL, labels, rows, 1); break;
    case LBK_FORMAT_IDX: st = lbk_idx_write_labels(path, labels, rows); break;
    case LBK_FORMAT_TEXT:
    case LBK_FORMAT_CSV:
        st = lbk_fmt_open_write(path, &file);
        if (st != LBK_OK)
            goto cleanup;
        for (uint64_t i = 0; i < rows && !ferror(file); i++)
            fprintf(file, "%d\n", (int)labels[i]);
        st = lbk_fmt_close_write(file, path);
        file = NULL;
        break;
    default:
        lbk_error("%s: cannot write labels as %s", path, lbk_format_name(format));
        st = LBK_ERR_INTERNAL;
        break;
    }
cleanup:
    if (file)
        fclose(file);
    return st;
}
