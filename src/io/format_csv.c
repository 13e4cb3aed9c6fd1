/* Delimited text: one point per line, an optional header line, optionally one
 * integer label column and one float target column (task regress). No
 * quoting: fields are numbers. Lines are variable
 * length, so a shard streams past the rows before its own. */
#include "format_io.h"

#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    lbk_fmt_line_reader lines;
    const lbk_job_input_spec *spec;
    char delim;
    char **field;
    int field_cap;
    int count;            /* fields on the current line */
    int expected;         /* fields on every line, from the first line */
    uint64_t expected_at; /* the line that set expected */
} csv_reader;

static void csv_close(csv_reader *r)
{
    lbk_fmt_lines_close(&r->lines);
    free(r->field);
    memset(r, 0, sizeof *r);
}

/* Splits the line in place into trimmed fields. */
static lbk_status csv_split(csv_reader *r, char *line)
{
    r->count = 0;
    for (char *p = line;;) {
        if (r->count == r->field_cap) {
            int cap = r->field_cap ? 2 * r->field_cap : 64;
            char **grown = realloc(r->field, (size_t)cap * sizeof *grown);
            LBK_FAIL_IF(!grown, LBK_ERR_NOMEM, "%s:%llu: out of memory splitting the line",
                        r->lines.path, (unsigned long long)r->lines.line);
            r->field = grown;
            r->field_cap = cap;
        }
        char *end = strchr(p, r->delim);
        if (end)
            *end = '\0';
        r->field[r->count++] = lbk_fmt_trim(p);
        if (!end)
            break;
        p = end + 1;
    }
    return LBK_OK;
}

/* The next line, split and checked for its field count; *more = false at
 * the end of the file. */
static lbk_status csv_next(csv_reader *r, bool *more)
{
    char *line = NULL;
    *more = false;
    LBK_TRY(lbk_fmt_lines_next(&r->lines, &line));
    if (!line)
        return LBK_OK;
    LBK_TRY(csv_split(r, line));
    if (r->expected == 0) {
        r->expected = r->count;
        r->expected_at = r->lines.line;
    }
    LBK_FAIL_IF(r->count != r->expected, LBK_ERR_INPUT,
                "%s:%llu: expected %d fields (as on line %llu), found %d", r->lines.path,
                (unsigned long long)r->lines.line, r->expected,
                (unsigned long long)r->expected_at, r->count);
    *more = true;
    return LBK_OK;
}

static bool line_is_header(const csv_reader *r)
{
    if (r->spec->header >= 0)
        return r->spec->header == 1;
    for (int c = 0; c < r->count; c++)
        if (!lbk_fmt_parse_number(r->field[c]))
            return true;
    return false;
}

/* Columns that are not coordinates: the label's and the target's. */
static int extra_columns(const lbk_job_input_spec *spec)
{
    return (spec->label_column >= 0) + (spec->target_column >= 0);
}

/* The first line's layout: the delimiter, and room for the label column
 * and at least one point column. */
static lbk_status check_layout(const csv_reader *r, const lbk_job_input_spec *spec)
{
    const char *path = spec->path;
    const unsigned long long first = r->lines.line;
    /* One field holding tabs or semicolons: a TSV or a European CSV read
     * with the wrong delimiter, whatever error would follow from it. */
    const char *other = r->count == 1 ? strpbrk(r->field[0], "\t;") : NULL;
    LBK_FAIL_IF(other, LBK_ERR_INPUT,
                "%s:%llu: no '%c' delimiter on the line, but %s; set the delimiter "
                "(delimiter: \"%s\")",
                path, first, r->delim, *other == '\t' ? "it holds tabs" : "it holds semicolons",
                *other == '\t' ? "\\t" : ";");
    /* long long: label_column may be INT_MAX, and the message is 1-based. */
    LBK_FAIL_IF(spec->label_column >= r->count, LBK_ERR_INPUT,
                "%s:%llu: label column %lld does not exist: the line has %d fields", path, first,
                (long long)spec->label_column + 1, r->count);
    LBK_FAIL_IF(spec->target_column >= r->count, LBK_ERR_INPUT,
                "%s:%llu: target column %lld does not exist: the line has %d fields", path, first,
                (long long)spec->target_column + 1, r->count);
    LBK_FAIL_IF(r->count - extra_columns(spec) < 1, LBK_ERR_INPUT,
                "%s:%llu: no point columns (dimension 0)", path, first);
    return LBK_OK;
}

/* Opens the file, reads past the header and leaves the first data line (if
 * any, *more) split in the reader; checks the column layout. The caller
 * closes the reader, also on failure. */
static lbk_status csv_open(csv_reader *r, const lbk_job_input_spec *spec, bool *more)
{
    memset(r, 0, sizeof *r);
    r->spec = spec;
    r->delim = spec->delimiter ? spec->delimiter : ',';
    *more = false;

    LBK_TRY(lbk_fmt_lines_open(&r->lines, spec->path));
    LBK_TRY(csv_next(r, more));
    LBK_FAIL_IF(!*more, LBK_ERR_INPUT, "%s: empty file", spec->path);
    LBK_TRY(check_layout(r, spec));
    if (line_is_header(r)) {
        LBK_TRY(csv_next(r, more));
        LBK_FAIL_IF(!*more, LBK_ERR_INPUT, "%s: no data rows after the header line", spec->path);
    }
    return LBK_OK;
}

lbk_status lbk_csv_probe(const lbk_job_input_spec *spec, uint64_t *rows, int *dim)
{
    lbk_status st = LBK_OK;
    csv_reader r;
    bool more = false;
    uint64_t n = 0;

    LBK_TRY_GOTO(st, csv_open(&r, spec, &more));
    while (more) {
        n++;
        LBK_TRY_GOTO(st, csv_next(&r, &more));
    }
    *rows = n;
    *dim = r.expected - extra_columns(spec);
cleanup:
    csv_close(&r);
    return st;
}

/* The split line in the reader as one row: its point, and its label when
 * there is a label column (labels may be NULL to check it and drop it). */
static lbk_status parse_row(const csv_reader *r, float *point, int32_t *label)
{
    const char *path = r->spec->path;
    const uint64_t line = r->lines.line;
    int32_t unused = 0;
    int j = 0;
    for (int c = 0; c < r->count; c++) {
        if (c == r->spec->label_column)
            LBK_TRY(lbk_fmt_parse_label(path, line, c + 1, r->field[c], label ? label : &unused));
        else if (c != r->spec->target_column) /* lbk_csv_read_targets reads it */
            LBK_TRY(lbk_fmt_parse_float(path, line, c + 1, r->field[c], &point[j++]));
    }
    return LBK_OK;
}

/* Rows [lo, hi) of an open reader, one call of `take` each (i counts from
 * lo's 0); a file shorter than hi is an error. */
typedef lbk_status (*csv_take_row)(const csv_reader *r, uint64_t i, void *user);

static lbk_status csv_rows(csv_reader *r, bool more, uint64_t lo, uint64_t hi, csv_take_row take,
                           void *user)
{
    for (uint64_t row = 0; row < hi; row++) {
        LBK_FAIL_IF(!more, LBK_ERR_INPUT,
                    "%s: file ended at row %llu, before row %llu (changed while reading?)",
                    r->spec->path, (unsigned long long)row, (unsigned long long)hi);
        if (row >= lo)
            LBK_TRY(take(r, row - lo, user));
        if (row + 1 < hi)
            LBK_TRY(csv_next(r, &more));
    }
    return LBK_OK;
}

typedef struct {
    int dim;
    float *points;
    int32_t *labels;
} points_out;

static lbk_status take_point(const csv_reader *r, uint64_t i, void *user)
{
    const points_out *out = user;
    return parse_row(r, out->points + i * (uint64_t)out->dim,
                     out->labels ? &out->labels[i] : NULL);
}

lbk_status lbk_csv_read(const lbk_job_input_spec *spec, int dim, uint64_t lo, uint64_t hi,
                        float *points, int32_t *labels)
{
    lbk_status st = LBK_OK;
    csv_reader r;
    bool more = false;
    points_out out = {dim, points, labels};

    LBK_TRY_GOTO(st, csv_open(&r, spec, &more));
    if (more)
        LBK_TRY_GOTO(
            st, lbk_fmt_check_dim(spec->path, (uint64_t)(r.expected - extra_columns(spec)), dim));
    st = csv_rows(&r, more, lo, hi, take_point, &out);
cleanup:
    csv_close(&r);
    return st;
}

static lbk_status take_target(const csv_reader *r, uint64_t i, void *user)
{
    const int c = r->spec->target_column;
    return lbk_fmt_parse_target(r->spec->path, r->lines.line, c + 1, r->field[c],
                                (double *)user + i);
}

lbk_status lbk_csv_read_targets(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi,
                                double *targets)
{
    lbk_status st = LBK_OK;
    csv_reader r;
    bool more = false;

    LBK_TRY_GOTO(st, csv_open(&r, spec, &more));
    st = csv_rows(&r, more, lo, hi, take_target, targets);
cleanup:
    csv_close(&r);
    return st;
}

lbk_status lbk_csv_write(const char *path, const lbk_dataset *data)
{
    FILE *file = NULL;
    LBK_TRY(lbk_fmt_open_write(path, &file));
    for (uint64_t i = 0; i < data->rows; i++) {
        const float *p = data->points + i * (uint64_t)data->dim;
        /* %.9g: nine significant digits always round-trip a float exactly. */
        for (int j = 0; j < data->dim; j++)
            fprintf(file, j ? ",%.9g" : "%.9g", (double)p[j]);
        if (data->labels)
            fprintf(file, ",%d", (int)data->labels[i]);
        fputc('\n', file);
        if (ferror(file))
            break; /* reported by the close below */
    }
    return lbk_fmt_close_write(file, path);
}
