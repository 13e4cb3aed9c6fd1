/* big-ann-benchmarks files: a little-endian header "uint32 rows, uint32
 * dim", then rows x dim values: float32 (.fbin), uint8 (.u8bin), int8
 * (.i8bin) or int32 (.ibin: ids, or labels with dim 1). Rows have a fixed
 * size after the 8-byte header, so a shard reads only its own bytes. */
#include "format_io.h"

#include "log.h"
#include "try.h"

#include <math.h>
#include <string.h>

#define HEADER_BYTES 8

static size_t value_bytes(lbk_format format)
{
    return format == LBK_FORMAT_U8BIN || format == LBK_FORMAT_I8BIN ? 1 : 4;
}

/* Header and file size; the caller closes *f, also on failure. */
static lbk_status open_checked(const char *path, lbk_format format, FILE **f, uint64_t *rows,
                               int *dim)
{
    unsigned char head[HEADER_BYTES];
    size_t got = 0;
    uint64_t size = 0;
    LBK_TRY(lbk_fmt_open_read(path, f));
    LBK_TRY(lbk_fmt_file_size(*f, path, &size));
    LBK_FAIL_IF(size == 0, LBK_ERR_INPUT, "%s: empty file", path);
    LBK_TRY(lbk_fmt_read(*f, path, head, sizeof head, &got));
    LBK_FAIL_IF(got < sizeof head, LBK_ERR_INPUT,
                "%s: truncated header (%zu bytes; a %s file starts with uint32 rows, uint32 dim)",
                path, got, lbk_format_name(format));
    const uint64_t n = lbk_fmt_get_le32(head), d = lbk_fmt_get_le32(head + 4);
    LBK_FAIL_IF(d == 0, LBK_ERR_INPUT, "%s: dimension 0", path);
    LBK_FAIL_IF(d > INT32_MAX, LBK_ERR_INPUT, "%s: dimension %llu is too large", path,
                (unsigned long long)d);
    const uint64_t rec = d * value_bytes(format);
    LBK_FAIL_IF(n != 0 && rec > (UINT64_MAX - HEADER_BYTES) / n, LBK_ERR_INPUT,
                "%s: the header declares %llu rows of dimension %llu, more than a file can hold",
                path, (unsigned long long)n, (unsigned long long)d);
    const uint64_t expect = HEADER_BYTES + n * rec;
    LBK_FAIL_IF(size < expect, LBK_ERR_INPUT,
                "%s:%llu: truncated record (file is %llu bytes, the header promises %llu)", path,
                (unsigned long long)((size - HEADER_BYTES) / rec + 1), (unsigned long long)size,
                (unsigned long long)expect);
    LBK_FAIL_IF(size > expect, LBK_ERR_INPUT,
                "%s: %llu bytes after the last row the header declares", path,
                (unsigned long long)(size - expect));
    *rows = n;
    *dim = (int)d;
    return LBK_OK;
}

lbk_status lbk_bigann_probe(const char *path, lbk_format format, uint64_t *rows, int *dim)
{
    FILE *f = NULL;
    const lbk_status st = open_checked(path, format, &f, rows, dim);
    if (f)
        fclose(f);
    return st;
}

/* One value as a double (exact for every type here). */
static double decode(lbk_format format, const unsigned char *p)
{
    switch (format) {
    case LBK_FORMAT_U8BIN: return p[0];
    case LBK_FORMAT_I8BIN: return (signed char)p[0];
    case LBK_FORMAT_IBIN: return (int32_t)lbk_fmt_get_le32(p);
    default: {
        const uint32_t bits = lbk_fmt_get_le32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    }
}

/* Where a read's records go (lbk_fmt_read_records). */
typedef struct {
    const char *path;
    lbk_format format;
    int dim;
    uint64_t lo;
    lbk_dtype type;
    void *points;
    int32_t *labels;
} sink;

static lbk_status decode_rows(const void *ctx, const unsigned char *buf, uint64_t row, uint64_t n)
{
    const sink *o = ctx;
    const int dim = o->dim;
    const uint64_t lo = o->lo;
    const size_t vb = value_bytes(o->format);
    for (uint64_t i = 0; i < n; i++, row++)
        for (int j = 0; j < dim; j++) {
            const double v = decode(o->format, buf + (i * (uint64_t)dim + (uint64_t)j) * vb);
            if (o->labels) {
                LBK_FAIL_IF(v < 0, LBK_ERR_INPUT, "%s:%llu: negative label %.0f", o->path,
                            (unsigned long long)(row + 1), v);
                o->labels[row - lo] = (int32_t)v;
                continue;
            }
            LBK_FAIL_IF(!isfinite(v), LBK_ERR_INPUT, "%s:%llu:%d: value is not finite (%g)",
                        o->path, (unsigned long long)(row + 1), j + 1, v);
            LBK_TRY(lbk_fmt_store_point(o->path, row, (uint64_t)j, v, o->type, o->points,
                                        (row - lo) * (uint64_t)dim + (uint64_t)j));
        }
    return LBK_OK;
}

lbk_status lbk_bigann_read(const char *path, lbk_format format, int want_dim, uint64_t lo,
                           uint64_t hi, lbk_dtype type, void *points, int32_t *labels)
{
    lbk_status st = LBK_OK;
    FILE *f = NULL;
    uint64_t rows = 0;
    int dim = 0;
    LBK_TRY_GOTO(st, open_checked(path, format, &f, &rows, &dim));
    LBK_TRY_GOTO(st, lbk_fmt_check_dim(path, (uint64_t)dim, want_dim));
    const sink out = {path, format, dim, lo, type, points, labels};
    st = lbk_fmt_read_records(f, path, HEADER_BYTES, (uint64_t)dim * value_bytes(format), lo, hi,
                              decode_rows, &out);
cleanup:
    if (f)
        fclose(f);
    return st;
}

void lbk_bigann_header(uint64_t rows, uint64_t cols, unsigned char *buf)
{
    lbk_fmt_put_le32(buf, (uint32_t)rows);
    lbk_fmt_put_le32(buf + 4, (uint32_t)cols);
}

/* Values a format cannot hold are refused before the file is created. */
static lbk_status check_values(const char *path, lbk_format format, const float *points,
                               uint64_t rows, int dim)
{
    const bool u8 = format == LBK_FORMAT_U8BIN, i8 = format == LBK_FORMAT_I8BIN;
    if (!u8 && !i8 && format != LBK_FORMAT_IBIN)
        return LBK_OK;
    const float lo = u8 ? 0.0f : i8 ? -128.0f : -2147483648.0f;
    const float hi = u8 ? 255.0f : i8 ? 127.0f : 2147483520.0f;
    for (uint64_t i = 0; i < rows * (uint64_t)dim; i++) {
        const float v = points[i];
        LBK_FAIL_IF(!(v >= lo && v <= hi && v == floorf(v)), LBK_ERR_INPUT,
                    "%s:%llu:%d: cannot write %g: %s holds integers %.0f..%.0f", path,
                    (unsigned long long)(i / (uint64_t)dim + 1), (int)(i % (uint64_t)dim) + 1,
                    (double)v, lbk_format_name(format), (double)lo, (double)hi);
    }
    return LBK_OK;
}

typedef struct {
    lbk_format format;
    const float *points;
    const int32_t *ints;
} values;

/* Records are single values here. */
static void encode(const void *ctx, uint64_t at, uint64_t n, unsigned char *buf)
{
    const values *v = ctx;
    const size_t vb = value_bytes(v->format);
    for (uint64_t i = 0; i < n; i++, at++) {
        unsigned char *p = buf + i * vb;
        if (v->format == LBK_FORMAT_U8BIN)
            *p = (unsigned char)v->points[at];
        else if (v->format == LBK_FORMAT_I8BIN)
            *p = (unsigned char)(signed char)v->points[at];
        else if (v->format == LBK_FORMAT_IBIN)
            lbk_fmt_put_le32(p, (uint32_t)(v->ints ? v->ints[at] : (int32_t)v->points[at]));
        else {
            uint32_t bits;
            memcpy(&bits, &v->points[at], sizeof bits);
            lbk_fmt_put_le32(p, bits);
        }
    }
}

lbk_status lbk_bigann_write(const char *path, lbk_format format, const float *points,
                            const int32_t *ints, uint64_t rows, int dim)
{
    unsigned char head[HEADER_BYTES];
    LBK_FAIL_IF(rows > UINT32_MAX, LBK_ERR_INPUT, "%s: %s holds at most %u rows, not %llu", path,
                lbk_format_name(format), (unsigned)UINT32_MAX, (unsigned long long)rows);
    if (points)
        LBK_TRY(check_values(path, format, points, rows, dim));
    lbk_bigann_header(rows, (uint64_t)dim, head);
    const values v = {format, points, ints};
    return lbk_fmt_write_records(path, head, sizeof head, value_bytes(format),
                                 rows * (uint64_t)dim, encode, &v);
}
