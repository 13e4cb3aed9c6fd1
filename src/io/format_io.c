/* Helpers shared by the format readers and writers: checked file access,
 * line reading with the blank-line rule, and whole-field number parsing. */
#include "format_io.h"

#include "alloc_large.h"
#include "file_read.h"
#include "log.h"
#include "try.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

lbk_status lbk_fmt_open_read(const char *path, FILE **out)
{
    return lbk_file_read_open(path, NULL, LBK_ERR_INPUT, out);
}

lbk_status lbk_fmt_open_write(const char *path, FILE **out)
{
    *out = fopen(path, "wb");
    LBK_FAIL_IF(!*out, LBK_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_fmt_close_write(FILE *file, const char *path)
{
    /* A full disk often shows only at the final flush, so fclose is checked. */
    bool failed = ferror(file) != 0;
    int saved = errno;
    if (fclose(file) != 0 && !failed) {
        failed = true;
        saved = errno;
    }
    LBK_FAIL_IF(failed, LBK_ERR_IO, "%s: cannot write: %s", path, strerror(saved ? saved : EIO));
    return LBK_OK;
}

lbk_status lbk_fmt_file_size(FILE *file, const char *path, uint64_t *size)
{
    struct stat sb;
    LBK_FAIL_IF(fstat(fileno(file), &sb) != 0, LBK_ERR_IO, "%s: cannot stat: %s", path,
                strerror(errno));
    *size = (uint64_t)sb.st_size;
    return LBK_OK;
}

lbk_status lbk_fmt_seek(FILE *file, const char *path, uint64_t offset)
{
    LBK_FAIL_IF(offset > (uint64_t)INT64_MAX || fseeko(file, (off_t)offset, SEEK_SET) != 0,
                LBK_ERR_IO, "%s: cannot seek to byte %llu: %s", path, (unsigned long long)offset,
                strerror(errno));
    return LBK_OK;
}

lbk_status lbk_fmt_read(FILE *file, const char *path, void *buf, size_t n, size_t *got)
{
    *got = fread(buf, 1, n, file);
    LBK_FAIL_IF(*got < n && ferror(file), LBK_ERR_IO, "%s: cannot read: %s", path,
                strerror(errno));
    return LBK_OK;
}

lbk_status lbk_fmt_write(FILE *file, const char *path, const void *buf, size_t n)
{
    LBK_FAIL_IF(n > 0 && fwrite(buf, 1, n, file) != n, LBK_ERR_IO, "%s: cannot write: %s", path,
                strerror(errno));
    return LBK_OK;
}

lbk_status lbk_fmt_alloc(void **out, uint64_t count, size_t size)
{
    *out = NULL;
    uint64_t bytes = count * (uint64_t)size;
    LBK_FAIL_IF(size != 0 && (count > SIZE_MAX / size || bytes / size != count), LBK_ERR_NOMEM,
                "cannot allocate %llu x %zu bytes: too large", (unsigned long long)count, size);
    /* Huge pages for the data sets (Fashion-MNIST's points are 188 MB of
     * first touches). Never NULL for 0 bytes. */
    *out = lbk_alloc_large((size_t)bytes);
    LBK_FAIL_IF(!*out, LBK_ERR_NOMEM, "cannot allocate %llu bytes", (unsigned long long)bytes);
    return LBK_OK;
}

lbk_status lbk_fmt_check_dim(const char *path, uint64_t got, int want)
{
    LBK_FAIL_IF(got != (uint64_t)want, LBK_ERR_INPUT,
                "%s: rows of %llu values now, %d when the file was probed (changed while "
                "reading?)",
                path, (unsigned long long)got, want);
    return LBK_OK;
}

uint64_t lbk_fmt_chunk_rows(uint64_t rec, uint64_t rows)
{
    uint64_t n = LBK_FMT_CHUNK_BYTES / rec ? LBK_FMT_CHUNK_BYTES / rec : 1;
    return rows && n > rows ? rows : n;
}

lbk_status lbk_fmt_read_records(FILE *file, const char *path, uint64_t data_offset, uint64_t rec,
                                uint64_t lo, uint64_t hi, lbk_fmt_decode_fn decode,
                                const void *ctx)
{
    lbk_status st = LBK_OK;
    unsigned char *buf = NULL;
    const uint64_t chunk_rows = lbk_fmt_chunk_rows(rec, hi - lo);
    LBK_TRY_GOTO(st, lbk_fmt_alloc((void **)&buf, chunk_rows, (size_t)rec));
    LBK_TRY_GOTO(st, lbk_fmt_seek(file, path, data_offset + lo * rec));
    for (uint64_t r = lo; r < hi;) {
        const uint64_t n = hi - r < chunk_rows ? hi - r : chunk_rows;
        size_t got = 0;
        LBK_TRY_GOTO(st, lbk_fmt_read(file, path, buf, (size_t)(n * rec), &got));
        if (got < n * rec) {
            lbk_error("%s:%llu: truncated record (unexpected end of file)", path,
                      (unsigned long long)(r + got / rec + 1));
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
        LBK_TRY_GOTO(st, decode(ctx, buf, r, n));
        r += n;
    }
cleanup:
    lbk_alloc_large_free(buf);
    return st;
}

lbk_status lbk_fmt_write_records(const char *path, const void *head, size_t head_bytes,
                                 uint64_t rec, uint64_t rows, lbk_fmt_encode_fn encode,
                                 const void *ctx)
{
    lbk_status st = LBK_OK;
    FILE *file = NULL;
    unsigned char *buf = NULL;
    const uint64_t chunk_rows = lbk_fmt_chunk_rows(rec, rows);
    LBK_TRY_GOTO(st, lbk_fmt_alloc((void **)&buf, chunk_rows, (size_t)rec));
    LBK_TRY_GOTO(st, lbk_fmt_open_write(path, &file));
    LBK_TRY_GOTO(st, lbk_fmt_write(file, path, head, head_bytes));
    for (uint64_t r = 0; r < rows;) {
        const uint64_t n = rows - r < chunk_rows ? rows - r : chunk_rows;
        encode(ctx, r, n, buf);
        LBK_TRY_GOTO(st, lbk_fmt_write(file, path, buf, (size_t)(n * rec)));
        r += n;
    }
    st = lbk_fmt_close_write(file, path);
    file = NULL;
cleanup:
    if (file)
        fclose(file);
    lbk_alloc_large_free(buf);
    return st;
}

void lbk_fmt_join_names(const lbk_enum_item *formats, const char *last_sep, char *buf,
                        unsigned size)
{
    if (formats[0].name && formats[0].value == LBK_FORMAT_AUTO)
        formats++;
    lbk_enum_join_names_last(formats, last_sep, buf, size);
}

/* ---- lines -------------------------------------------------------------- */

lbk_status lbk_fmt_lines_open(lbk_fmt_line_reader *reader, const char *path)
{
    memset(reader, 0, sizeof *reader);
    reader->path = path;
    return lbk_fmt_open_read(path, &reader->file);
}

void lbk_fmt_lines_close(lbk_fmt_line_reader *reader)
{
    if (reader->file)
        fclose(reader->file);
    free(reader->buf);
    memset(reader, 0, sizeof *reader);
}

/* One physical line into reader->buf; *line = NULL at end of file. */
static lbk_status read_physical(lbk_fmt_line_reader *reader, char **line)
{
    *line = NULL;
    errno = 0;
    ssize_t len = getline(&reader->buf, &reader->cap, reader->file);
    if (len < 0) {
        /* getline fails without setting the error flag when it cannot grow
         * its buffer: only a real end of file ends the lines. */
        const int saved = errno;
        LBK_FAIL_IF(saved == ENOMEM || (!ferror(reader->file) && !feof(reader->file)),
                    LBK_ERR_NOMEM, "%s:%llu: out of memory reading a line", reader->path,
                    (unsigned long long)reader->line + 1);
        LBK_FAIL_IF(ferror(reader->file), LBK_ERR_IO, "%s: cannot read: %s", reader->path,
                    strerror(saved ? saved : EIO));
        return LBK_OK;
    }
    reader->line++;
    if (len > 0 && reader->buf[len - 1] == '\n')
        reader->buf[--len] = '\0';
    if (len > 0 && reader->buf[len - 1] == '\r')
        reader->buf[--len] = '\0';
    LBK_FAIL_IF(strlen(reader->buf) != (size_t)len, LBK_ERR_INPUT,
                "%s:%llu: line contains a NUL byte (binary file?)", reader->path,
                (unsigned long long)reader->line);
    /* A lone CR is an old Mac line end: the whole file would read as one
     * line and fail later with a message about something else. */
    LBK_FAIL_IF(memchr(reader->buf, '\r', (size_t)len), LBK_ERR_INPUT,
                "%s:%llu: carriage return inside a line (lines must end in LF or CRLF)",
                reader->path, (unsigned long long)reader->line);
    /* Spreadsheets write a UTF-8 byte-order mark first. Left in place it
     * turns the first number into text, and header auto-detection would
     * then drop the first data row without a word. */
    if (reader->line == 1 && len >= 3 && memcmp(reader->buf, "\xEF\xBB\xBF", 3) == 0)
        memmove(reader->buf, reader->buf + 3, (size_t)len - 2);
    *line = reader->buf;
    return LBK_OK;
}

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\f' && *s != '\v')
            return false;
    return true;
}

lbk_status lbk_fmt_lines_next(lbk_fmt_line_reader *reader, char **line)
{
    uint64_t first_blank = 0;
    *line = NULL;
    for (;;) {
        LBK_TRY(read_physical(reader, line));
        if (!*line || !is_blank(*line))
            break;
        if (!first_blank)
            first_blank = reader->line;
    }
    if (*line && first_blank) {
        lbk_error("%s:%llu: empty line before the end of the file", reader->path,
                  (unsigned long long)first_blank);
        *line = NULL;
        return LBK_ERR_INPUT;
    }
    return LBK_OK;
}

/* ---- fields ------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

char *lbk_fmt_trim(char *s)
{
    while (is_space(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1]))
        s[--n] = '\0';
    return s;
}

bool lbk_fmt_parse_number(const char *field)
{
    char *end = NULL;
    if (!*field)
        return false;
    (void)strtod(field, &end);
    return *end == '\0';
}

/* "PATH:ROW[:COL]: what[: 'field']". The field is shown escaped and cut
 * short: it may hold tabs or control bytes, or be a whole megabyte line,
 * and the error must stay one readable line. */
static void log_at(const char *path, uint64_t row, int col, const char *what, const char *field)
{
    char where[32] = "";
    char shown[4 * 64 + 4];
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)field;
    for (; *p && n < 4 * 64 - 4 && p - (const unsigned char *)field < 64; p++) {
        if (*p < 0x20 || *p == 0x7f)
            n += (size_t)snprintf(shown + n, sizeof shown - n, "\\x%02x", *p);
        else
            shown[n++] = (char)*p;
    }
    shown[n] = '\0';
    if (*p)
        snprintf(shown + n, sizeof shown - n, "...");
    if (col > 0)
        snprintf(where, sizeof where, ":%d", col);
    if (*field)
        lbk_error("%s:%llu%s: %s: '%s'", path, (unsigned long long)row, where, what, shown);
    else
        lbk_error("%s:%llu%s: %s", path, (unsigned long long)row, where, what);
}

lbk_status lbk_fmt_parse_float(const char *path, uint64_t row, int col, const char *field,
                               float *out)
{
    char *end = NULL;
    errno = 0;
    float v = *field ? strtof(field, &end) : 0.0f;
    const char *why = NULL;
    if (!*field || *end != '\0')
        why = *field ? "not a number" : "empty field";
    else if (!isfinite(v)) /* strtof gives HUGE_VALF with ERANGE for "1e99" */
        why = errno == ERANGE ? "too large for a float" : "not a finite number";
    if (why) {
        log_at(path, row, col, why, field);
        return LBK_ERR_INPUT;
    }
    *out = v;
    return LBK_OK;
}

lbk_status lbk_fmt_parse_target(const char *path, uint64_t row, int col, const char *field,
                                double *out)
{
    char *end = NULL;
    errno = 0;
    const double v = *field ? strtod(field, &end) : 0.0;
    const char *why = NULL;
    if (!*field)
        why = "empty target";
    else if (*end != '\0')
        why = "target is not a number";
    else if (!isfinite(v)) /* strtod gives HUGE_VAL with ERANGE for "1e999" */
        why = errno == ERANGE ? "target too large for a double" : "target is not a finite number";
    if (why) {
        log_at(path, row, col, why, field);
        return LBK_ERR_INPUT;
    }
    *out = v;
    return LBK_OK;
}

lbk_status lbk_fmt_parse_label(const char *path, uint64_t row, int col, const char *field,
                               int32_t *out)
{
    char *end = NULL;
    errno = 0;
    long v = *field ? strtol(field, &end, 10) : 0;
    const char *why = NULL;
    if (!*field)
        why = "empty label";
    else if (*end != '\0')
        why = lbk_fmt_parse_number(field) ? "label is not an integer" : "label is not a number";
    else if (v < 0)
        why = "negative label";
    else if (errno == ERANGE || v > INT32_MAX)
        why = "label too large";
    if (why) {
        log_at(path, row, col, why, field);
        return LBK_ERR_INPUT;
    }
    *out = (int32_t)v;
    return LBK_OK;
}
