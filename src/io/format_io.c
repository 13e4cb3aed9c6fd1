/* Helpers shared by the format readers and writers: checked file access,
 * line reading with the blank-line rule, and whole-field number parsing. */
#include "format_io.h"

#include "file_read.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

lbk_status lbk_fmt_open_read(const char *path, FILE **out)
{
    return lbk_open_for_reading(path, NULL, LBK_ERR_INPUT, out);
}

lbk_status lbk_fmt_open_write(const char *path, FILE **out)
{
    lbk_status st = LBK_OK;
    *out = fopen(path, "wb");
    if (!*out) {
        lbk_error("%s: cannot create: %s", path, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
cleanup:
    return st;
}

lbk_status lbk_fmt_close_write(FILE *file, const char *path)
{
    lbk_status st = LBK_OK;
    /* A full disk often shows only at the final flush, so fclose is checked. */
    bool failed = ferror(file) != 0;
    int saved = errno;
    if (fclose(file) != 0 && !failed) {
        failed = true;
        saved = errno;
    }
    if (failed) {
        lbk_error("%s: cannot write: %s", path, strerror(saved ? saved : EIO));
        st = LBK_ERR_IO;
        goto cleanup;
    }
cleanup:
    return st;
}

lbk_status lbk_fmt_file_size(FILE *file, const char *path, uint64_t *size)
{
    lbk_status st = LBK_OK;
    struct stat sb;
    if (fstat(fileno(file), &sb) != 0) {
        lbk_error("%s: cannot stat: %s", path, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
    *size = (uint64_t)sb.st_size;
cleanup:
    return st;
}

lbk_status lbk_fmt_seek(FILE *file, const char *path, uint64_t offset)
{
    lbk_status st = LBK_OK;
    if (offset > (uint64_t)INT64_MAX || fseeko(file, (off_t)offset, SEEK_SET) != 0) {
        lbk_error("%s: cannot seek to byte %llu: %s", path, (unsigned long long)offset,
                  strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
cleanup:
    return st;
}

lbk_status lbk_fmt_read(FILE *file, const char *path, void *buf, size_t n, size_t *got)
{
    lbk_status st = LBK_OK;
    *got = fread(buf, 1, n, file);
    if (*got < n && ferror(file)) {
        lbk_error("%s: cannot read: %s", path, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
cleanup:
    return st;
}

lbk_status lbk_fmt_write(FILE *file, const char *path, const void *buf, size_t n)
{
    lbk_status st = LBK_OK;
    if (n > 0 && fwrite(buf, 1, n, file) != n) {
        lbk_error("%s: cannot write: %s", path, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
cleanup:
    return st;
}

lbk_status lbk_fmt_alloc(void **out, uint64_t count, size_t size)
{
    lbk_status st = LBK_OK;
    *out = NULL;
    uint64_t bytes = count * (uint64_t)size;
    if (size != 0 && (count > SIZE_MAX / size || bytes / size != count)) {
        lbk_error("cannot allocate %llu x %zu bytes: too large", (unsigned long long)count,
                  size);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    /* malloc(0) may return NULL; one byte keeps "NULL means failure". */
    *out = malloc(bytes ? (size_t)bytes : 1);
    if (!*out) {
        lbk_error("cannot allocate %llu bytes", (unsigned long long)bytes);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
cleanup:
    return st;
}

/* ---- lines -------------------------------------------------------------- */

lbk_status lbk_lines_open(lbk_line_reader *reader, const char *path)
{
    memset(reader, 0, sizeof *reader);
    reader->path = path;
    return lbk_fmt_open_read(path, &reader->file);
}

void lbk_lines_close(lbk_line_reader *reader)
{
    if (reader->file)
        fclose(reader->file);
    free(reader->buf);
    memset(reader, 0, sizeof *reader);
}

/* One physical line into reader->buf; *line = NULL at end of file. */
static lbk_status read_physical(lbk_line_reader *reader, char **line)
{
    lbk_status st = LBK_OK;
    *line = NULL;
    errno = 0;
    ssize_t len = getline(&reader->buf, &reader->cap, reader->file);
    if (len < 0) {
        if (ferror(reader->file)) {
            lbk_error("%s: cannot read: %s", reader->path, strerror(errno));
            st = LBK_ERR_IO;
        }
        goto cleanup;
    }
    reader->line++;
    if (len > 0 && reader->buf[len - 1] == '\n')
        reader->buf[--len] = '\0';
    if (len > 0 && reader->buf[len - 1] == '\r')
        reader->buf[--len] = '\0';
    if (strlen(reader->buf) != (size_t)len) {
        lbk_error("%s:%llu: line contains a NUL byte (binary file?)", reader->path,
                  (unsigned long long)reader->line);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    /* A lone CR is an old Mac line end: the whole file would read as one
     * line and fail later with a message about something else. */
    if (memchr(reader->buf, '\r', (size_t)len)) {
        lbk_error("%s:%llu: carriage return inside a line (lines must end in LF or CRLF)",
                  reader->path, (unsigned long long)reader->line);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    /* Spreadsheets write a UTF-8 byte-order mark first. Left in place it
     * turns the first number into text, and header auto-detection would
     * then drop the first data row without a word. */
    if (reader->line == 1 && len >= 3 && memcmp(reader->buf, "\xEF\xBB\xBF", 3) == 0)
        memmove(reader->buf, reader->buf + 3, (size_t)len - 2);
    *line = reader->buf;
cleanup:
    return st;
}

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\f' && *s != '\v')
            return false;
    return true;
}

lbk_status lbk_lines_next(lbk_line_reader *reader, char **line)
{
    lbk_status st = LBK_OK;
    uint64_t first_blank = 0;
    char *text = NULL;
    for (;;) {
        st = read_physical(reader, &text);
        if (st != LBK_OK || !text)
            goto cleanup;
        if (!is_blank(text))
            break;
        if (!first_blank)
            first_blank = reader->line;
    }
    if (first_blank) {
        lbk_error("%s:%llu: empty line before the end of the file", reader->path,
                  (unsigned long long)first_blank);
        st = LBK_ERR_INPUT;
        text = NULL;
        goto cleanup;
    }
cleanup:
    *line = text;
    return st;
}

/* ---- fields ------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

char *lbk_trim(char *s)
{
    while (is_space(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1]))
        s[--n] = '\0';
    return s;
}

bool lbk_parse_number(const char *field)
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

lbk_status lbk_parse_float(const char *path, uint64_t row, int col, const char *field,
                           float *out)
{
    lbk_status st = LBK_OK;
    char *end = NULL;
    errno = 0;
    float v = *field ? strtof(field, &end) : 0.0f;
    if (!*field || *end != '\0') {
        log_at(path, row, col, *field ? "not a number" : "empty field", field);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (!isfinite(v)) {
        /* strtof returns HUGE_VALF with ERANGE for "1e99": out of float range. */
        log_at(path, row, col, errno == ERANGE ? "too large for a float" : "not a finite number",
               field);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    *out = v;
cleanup:
    return st;
}

lbk_status lbk_parse_label(const char *path, uint64_t row, int col, const char *field,
                           int32_t *out)
{
    lbk_status st = LBK_OK;
    char *end = NULL;
    errno = 0;
    long v = *field ? strtol(field, &end, 10) : 0;
    if (!*field || *end != '\0') {
        const char *what = !*field ? "empty label"
                           : lbk_parse_number(field) ? "label is not an integer"
                                                     : "label is not a number";
        log_at(path, row, col, what, field);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (v < 0) {
        log_at(path, row, col, "negative label", field);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (errno == ERANGE || v > INT32_MAX) {
        log_at(path, row, col, "label too large", field);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    *out = (int32_t)v;
cleanup:
    return st;
}
