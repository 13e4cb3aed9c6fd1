/* Delimited text: one point per line, an optional header line, optionally one
 * integer label column. No quoting: fields are numbers. Lines are variable
 * length, so a shard streams past the rows before its own. */
#include "format_io.h"

#include "log.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    lbk_line_reader lines;
    const lbk_input_spec *spec;
    char delim;
    char **field;
    int field_cap;
    int count;            /* fields on the current line */
    int expected;         /* fields on every line, from the first line */
    uint64_t expected_at; /* the line that set expected */
} csv_reader;

static void csv_close(csv_reader *r)
{
    lbk_lines_close(&r->lines);
    free(r->field);
    memset(r, 0, sizeof *r);
}

/* Splits the line in place into trimmed fields. */
static lbk_status csv_split(csv_reader *r, char *line)
{
    lbk_status st = LBK_OK;
    r->count = 0;
    for (char *p = line;;) {
        if (r->count == r->field_cap) {
            int cap = r->field_cap ? 2 * r->field_cap : 64;
            char **grown = realloc(r->field, (size_t)cap * sizeof *grown);
            if (!grown) {
                lbk_error("%s:%llu: out of memory splitting the line", r->lines.path,
                          (unsigned long long)r->lines.line);
                st = LBK_ERR_NOMEM;
                goto cleanup;
            }
            r->field = grown;
            r->field_cap = cap;
        }
        char *end = strchr(p, r->delim);
        if (end)
            *end = '\0';
        r->field[r->count++] = lbk_trim(p);
        if (!end)
            break;
        p = end + 1;
    }
cleanup:
    return st;
}

/* The next line, split and checked for its field count; *more = false at
 * the end of the file. */
static lbk_status csv_next(csv_reader *r, bool *more)
{
    lbk_status st = LBK_OK;
    char *line = NULL;
    *more = false;
    st = lbk_lines_next(&r->lines, &line);
    if (st != LBK_OK || !line)
        goto cleanup;
    st = csv_split(r, line);
    if (st != LBK_OK)
        goto cleanup;
    if (r->expected == 0) {
        r->expected = r->count;
        r->expected_at = r->lines.line;
    } else if (r->count != r->expected) {
        lbk_error("%s:%llu: expected %d fields (as on line %llu), found %d", r->lines.path,
                  (unsigned long long)r->lines.line, r->expected,
                  (unsigned long long)r->expected_at, r->count);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    *more = true;
cleanup:
    return st;
}

static bool line_is_header(const csv_reader *r)
{
    if (r->spec->header >= 0)
        return r->spec->header == 1;
    for (int c = 0; c < r->count; c++)
        if (!lbk_parse_number(r->field[c]))
            return true;
    return false;
}

/* Opens the file, reads past the header and leaves the first data line (if
 * any, *more) split in the reader; checks the column layout. */
static lbk_status csv_open(csv_reader *r, const lbk_input_spec *spec, bool *more)
{
    lbk_status st = LBK_OK;
    memset(r, 0, sizeof *r);
    r->spec = spec;
    r->delim = spec->delimiter ? spec->delimiter : ',';
    const char *path = spec->path;
    *more = false;

    st = lbk_lines_open(&r->lines, path);
    if (st != LBK_OK)
        goto cleanup;
    st = csv_next(r, more);
    if (st != LBK_OK)
        goto cleanup;
    if (!*more) {
        lbk_error("%s: empty file", path);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    uint64_t first = r->lines.line;
    /* One field holding tabs or semicolons: a TSV or a European CSV read
     * with the wrong delimiter, whatever error would follow from it. */
    const char *other = r->count == 1 ? strpbrk(r->field[0], "\t;") : NULL;
    if (other) {
        lbk_error("%s:%llu: no '%c' delimiter on the line, but %s; set the delimiter "
                  "(delimiter: \"%s\")",
                  path, (unsigned long long)first, r->delim,
                  *other == '\t' ? "it holds tabs" : "it holds semicolons",
                  *other == '\t' ? "\\t" : ";");
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (spec->label_column >= r->count) {
        /* long long: label_column may be INT_MAX, and the message is 1-based. */
        lbk_error("%s:%llu: label column %lld does not exist: the line has %d fields", path,
                  (unsigned long long)first, (long long)spec->label_column + 1, r->count);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (r->count - (spec->label_column >= 0) < 1) {
        lbk_error("%s:%llu: no point columns (dimension 0)", path, (unsigned long long)first);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (line_is_header(r)) {
        st = csv_next(r, more);
        if (st != LBK_OK)
            goto cleanup;
        if (!*more) {
            lbk_error("%s: no data rows after the header line", path);
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
    }
cleanup:
    return st;
}

lbk_status lbk_csv_probe(const lbk_input_spec *spec, uint64_t *rows, int *dim)
{
    lbk_status st = LBK_OK;
    csv_reader r;
    bool more = false;
    uint64_t n = 0;

    st = csv_open(&r, spec, &more);
    if (st != LBK_OK)
        goto cleanup;
    while (more) {
        n++;
        st = csv_next(&r, &more);
        if (st != LBK_OK)
            goto cleanup;
    }
    *rows = n;
    *dim = r.expected - (spec->label_column >= 0);
cleanup:
    csv_close(&r);
    return st;
}

lbk_status lbk_csv_read(const lbk_input_spec *spec, int dim, uint64_t lo, uint64_t hi,
                        float *points, int32_t *labels)
{
    lbk_status st = LBK_OK;
    csv_reader r;
    bool more = false;
    const char *path = spec->path;
    const int label_col = spec->label_column;

    st = csv_open(&r, spec, &more);
    if (st != LBK_OK)
        goto cleanup;
    for (uint64_t row = 0; row < hi; row++) {
        if (!more) {
            lbk_error("%s: file ended at row %llu, before row %llu (changed while reading?)",
                      path, (unsigned long long)row, (unsigned long long)hi);
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
        if (row >= lo) {
            const uint64_t line = r.lines.line;
            float *point = points + (row - lo) * (uint64_t)dim;
            int j = 0;
            for (int c = 0; c < r.count; c++) {
                if (c == label_col)
                    st = lbk_parse_label(path, line, c + 1, r.field[c],
                                         labels ? &labels[row - lo] : &(int32_t){0});
                else
                    st = lbk_parse_float(path, line, c + 1, r.field[c], &point[j++]);
                if (st != LBK_OK)
                    goto cleanup;
            }
        }
        if (row + 1 < hi) {
            st = csv_next(&r, &more);
            if (st != LBK_OK)
                goto cleanup;
        }
    }
cleanup:
    csv_close(&r);
    return st;
}

lbk_status lbk_csv_write(const char *path, const lbk_dataset *data)
{
    lbk_status st = LBK_OK;
    FILE *file = NULL;
    st = lbk_fmt_open_write(path, &file);
    if (st != LBK_OK)
        goto cleanup;
    for (uint64_t i = 0; i < data->rows; i++) {
        const float *p = data->points + i * (uint64_t)data->dim;
        /* %.9g: nine significant digits always round-trip a float exactly. */
        for (int j = 0; j < data->dim; j++)
            fprintf(file, j ? ",%.9g" : "%.9g", (double)p[j]);
        if (data->labels)
            fprintf(file, ",%d", (int)data->labels[i]);
        fputc('\n', file);
        if (ferror(file))
            break;  /* reported by the close below */
    }
    st = lbk_fmt_close_write(file, path);
    file = NULL;
cleanup:
    if (file)
        fclose(file);
    return st;
}
