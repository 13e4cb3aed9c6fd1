/* TEXMEX vector files (fvecs, ivecs, bvecs): every record is a little-endian
 * int32 dimension followed by that many values (float32, int32 or uint8).
 * Records have a fixed size, so row lo starts at byte lo * record size and a
 * shard reads only its own bytes. */
#include "format_io.h"

#include "log.h"
#include "try.h"

#include <math.h>
#include <string.h>

static size_t value_bytes(lbk_format format) { return format == LBK_FORMAT_BVECS ? 1 : 4; }

static uint64_t record_bytes(lbk_format format, int dim)
{
    return 4 + (uint64_t)dim * value_bytes(format);
}

/* The first record's dimension and the record count, from the file size. */
static lbk_status probe_open(FILE *file, const char *path, lbk_format format, uint64_t *rows,
                             int *dim)
{
    uint64_t size = 0;
    unsigned char head[4];
    size_t got = 0;
    LBK_TRY(lbk_fmt_file_size(file, path, &size));
    LBK_FAIL_IF(size == 0, LBK_ERR_INPUT, "%s: empty file", path);
    LBK_TRY(lbk_fmt_read(file, path, head, sizeof head, &got));
    LBK_FAIL_IF(got < sizeof head, LBK_ERR_INPUT, "%s:1: truncated record (file is %llu bytes)",
                path, (unsigned long long)size);
    const int32_t d = (int32_t)lbk_fmt_get_le32(head);
    LBK_FAIL_IF(d <= 0, LBK_ERR_INPUT, "%s:1: invalid dimension %d (must be at least 1)", path,
                (int)d);
    const uint64_t rec = record_bytes(format, d);
    LBK_FAIL_IF(size % rec != 0, LBK_ERR_INPUT,
                "%s:%llu: truncated record (file is %llu bytes, not a multiple of the "
                "%llu-byte record of dimension %d)",
                path, (unsigned long long)(size / rec + 1), (unsigned long long)size,
                (unsigned long long)rec, (int)d);
    *rows = size / rec;
    *dim = d;
    return LBK_OK;
}

lbk_status lbk_texmex_probe(const char *path, lbk_format format, uint64_t *rows, int *dim)
{
    FILE *file = NULL;
    LBK_TRY(lbk_fmt_open_read(path, &file));
    const lbk_status st = probe_open(file, path, format, rows, dim);
    fclose(file);
    return st;
}

/* Checks and converts one record; row is 1-based for messages. */
static lbk_status decode_record(const char *path, lbk_format format, int dim, uint64_t row,
                                const unsigned char *rec, lbk_dtype type, void *out,
                                int32_t *ints)
{
    const int32_t d = (int32_t)lbk_fmt_get_le32(rec);
    LBK_FAIL_IF(d != dim, LBK_ERR_INPUT,
                "%s:%llu: record has dimension %d, but the first record has %d", path,
                (unsigned long long)row, (int)d, dim);
    const unsigned char *v = rec + 4;
    if (type == LBK_DTYPE_UINT8) { /* bvecs at its own width */
        memcpy(out, v, (size_t)dim);
        return LBK_OK;
    }
    float *points = out;
    for (int j = 0; j < dim; j++) {
        if (format == LBK_FORMAT_BVECS) {
            points[j] = (float)v[j];
        } else if (format == LBK_FORMAT_IVECS) {
            int32_t x = (int32_t)lbk_fmt_get_le32(v + 4 * (size_t)j);
            if (ints)
                ints[j] = x;
            else
                points[j] = (float)x;
        } else {
            uint32_t bits = lbk_fmt_get_le32(v + 4 * (size_t)j);
            float x;
            memcpy(&x, &bits, sizeof x);
            LBK_FAIL_IF(!isfinite(x), LBK_ERR_INPUT, "%s:%llu:%d: value is not finite (%g)", path,
                        (unsigned long long)row, j + 1, (double)x);
            points[j] = x;
        }
    }
    return LBK_OK;
}

/* Where a read's records go (lbk_fmt_read_records). */
typedef struct {
    const char *path;
    lbk_format format;
    int dim;
    uint64_t lo;
    lbk_dtype type;
    void *points;
    int32_t *ints;
} sink;

static lbk_status decode_records(const void *ctx, const unsigned char *buf, uint64_t row,
                                 uint64_t n)
{
    const sink *o = ctx;
    const uint64_t rec = record_bytes(o->format, o->dim);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t out = (row + i - o->lo) * (uint64_t)o->dim;
        LBK_TRY(decode_record(
            o->path, o->format, o->dim, row + i + 1, buf + i * rec, o->type,
            o->points ? (char *)o->points + out * lbk_dataset_type_bytes(o->type) : NULL,
            o->ints ? o->ints + out : NULL));
    }
    return LBK_OK;
}

lbk_status lbk_texmex_read(const char *path, lbk_format format, int dim, uint64_t lo, uint64_t hi,
                           lbk_dtype type, void *points, int32_t *ints)
{
    lbk_status st = LBK_OK;
    FILE *file = NULL;
    LBK_TRY_GOTO(st, lbk_fmt_open_read(path, &file));
    const sink out = {path, format, dim, lo, type, points, ints};
    st = lbk_fmt_read_records(file, path, 0, record_bytes(format, dim), lo, hi, decode_records,
                              &out);
cleanup:
    if (file)
        fclose(file);
    return st;
}

/* Writers refuse values the format cannot hold before creating the file.
 * Non-finite floats are written as given: distance outputs may hold +inf
 * padding, and the readers are where input is judged. */
static lbk_status check_values(const char *path, lbk_format format, const float *points,
                               uint64_t rows, int dim)
{
    for (uint64_t i = 0; i < rows; i++) {
        for (int j = 0; j < dim; j++) {
            float v = points[i * (uint64_t)dim + (uint64_t)j];
            bool ok = true;
            const char *need = "";
            if (format == LBK_FORMAT_BVECS) {
                ok = v >= 0.0f && v <= 255.0f && v == floorf(v);
                need = "bvecs holds integers 0..255";
            } else if (format == LBK_FORMAT_IVECS) {
                ok = v >= -2147483648.0f && v < 2147483648.0f && v == floorf(v);
                need = "ivecs holds 32-bit integers";
            }
            LBK_FAIL_IF(!ok, LBK_ERR_INPUT, "%s:%llu:%d: cannot write %g: %s", path,
                        (unsigned long long)(i + 1), j + 1, (double)v, need);
        }
    }
    return LBK_OK;
}

typedef struct {
    lbk_format format;
    int dim;
    const float *points;
    const int32_t *ints;
} records;

static void encode_record(lbk_format format, int dim, const float *points, const int32_t *ints,
                          unsigned char *rec)
{
    lbk_fmt_put_le32(rec, (uint32_t)dim);
    unsigned char *v = rec + 4;
    for (int j = 0; j < dim; j++) {
        if (format == LBK_FORMAT_BVECS) {
            v[j] = (unsigned char)points[j];
        } else if (format == LBK_FORMAT_IVECS) {
            int32_t x = ints ? ints[j] : (int32_t)points[j];
            lbk_fmt_put_le32(v + 4 * (size_t)j, (uint32_t)x);
        } else {
            uint32_t bits;
            memcpy(&bits, &points[j], sizeof bits);
            lbk_fmt_put_le32(v + 4 * (size_t)j, bits);
        }
    }
}

static void encode_records(const void *ctx, uint64_t row, uint64_t n, unsigned char *buf)
{
    const records *r = ctx;
    const uint64_t rec = record_bytes(r->format, r->dim);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t at = (row + i) * (uint64_t)r->dim;
        encode_record(r->format, r->dim, r->points ? r->points + at : NULL,
                      r->ints ? r->ints + at : NULL, buf + i * rec);
    }
}

lbk_status lbk_texmex_write(const char *path, lbk_format format, const float *points,
                            const int32_t *ints, uint64_t rows, int dim)
{
    LBK_FAIL_IF(dim <= 0, LBK_ERR_INTERNAL, "%s: cannot write dimension %d", path, dim);
    if (points && format != LBK_FORMAT_FVECS)
        LBK_TRY(check_values(path, format, points, rows, dim));
    const records r = {format, dim, points, ints};
    return lbk_fmt_write_records(path, NULL, 0, record_bytes(format, dim), rows, encode_records,
                                 &r);
}
