/* IDX (the MNIST format): a big-endian header "0, 0, type, ndims" and ndims
 * uint32 sizes, then the values row-major. The first size is the row count;
 * the rest multiply to the point dimension (28 x 28 images -> 784).
 * Compressed files are recognised by the gzip magic; a reader takes a small
 * one whole through libdeflate (gzip_whole.h) and streams the rest through
 * zlib; plain files seek straight to a shard's first row. */
#include "alloc_large.h"
#include "format_io.h"
#include "gzip_whole.h"

#include "log.h"
#include "try.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_NDIMS 16

enum {
    IDX_U8 = 0x08,
    IDX_I8 = 0x09,
    IDX_I16 = 0x0B,
    IDX_I32 = 0x0C,
    IDX_F32 = 0x0D,
    IDX_F64 = 0x0E
};

typedef struct {
    const char *path;
    FILE *file;
    gzFile gz;
    unsigned char *mem; /* a gzip file decompressed whole, else NULL */
    size_t mem_len, mem_pos;
    uint64_t compressed_bytes; /* a gzip file's size on disk */
} idx_stream;

typedef struct {
    int type;
    size_t value_bytes;
    int ndims;
    uint64_t rows;
    uint64_t dim;
    uint64_t header_bytes;
} idx_header;

static size_t type_bytes(int type)
{
    switch (type) {
    case IDX_U8:
    case IDX_I8: return 1;
    case IDX_I16: return 2;
    case IDX_I32:
    case IDX_F32: return 4;
    case IDX_F64: return 8;
    default: return 0;
    }
}

static bool type_is_integer(int type) { return type != IDX_F32 && type != IDX_F64; }

static void stream_close(idx_stream *s)
{
    if (s->file)
        fclose(s->file);
    if (s->gz)
        gzclose(s->gz);
    free(s->mem);
    s->file = NULL;
    s->gz = NULL;
    s->mem = NULL;
}

static bool stream_compressed(const idx_stream *s) { return s->gz || s->mem; }

/* whole: a reader, which will decompress the file anyway (the probe reads
 * only the header). */
static lbk_status stream_open(idx_stream *s, const char *path, bool whole)
{
    lbk_status st = LBK_OK;
    unsigned char magic[2];
    size_t got = 0;
    memset(s, 0, sizeof *s);
    s->path = path;
    LBK_TRY_GOTO(st, lbk_fmt_open_read(path, &s->file));
    LBK_TRY_GOTO(st, lbk_fmt_read(s->file, path, magic, sizeof magic, &got));
    if (got == sizeof magic && magic[0] == 0x1f && magic[1] == 0x8b) {
        LBK_TRY_GOTO(st, lbk_fmt_file_size(s->file, path, &s->compressed_bytes));
        if (whole)
            lbk_gzip_whole(s->file, s->compressed_bytes, &s->mem, &s->mem_len);
        fclose(s->file);
        s->file = NULL;
        if (s->mem)
            goto cleanup;
        errno = 0;
        s->gz = gzopen(path, "rb");
        if (!s->gz) {
            lbk_error("%s: cannot open: %s", path, errno ? strerror(errno) : "zlib failed");
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
        gzbuffer(s->gz, 1 << 18);
    } else {
        st = lbk_fmt_seek(s->file, path, 0);
    }
cleanup:
    if (st != LBK_OK)
        stream_close(s);
    return st;
}

static lbk_status stream_read(idx_stream *s, void *buf, size_t n, size_t *got)
{
    if (s->file)
        return lbk_fmt_read(s->file, s->path, buf, n, got);
    if (s->mem) {
        *got = n < s->mem_len - s->mem_pos ? n : s->mem_len - s->mem_pos;
        memcpy(buf, s->mem + s->mem_pos, *got);
        s->mem_pos += *got;
        return LBK_OK;
    }
    *got = 0;
    while (*got < n) {
        size_t want = n - *got < ((size_t)1 << 30) ? n - *got : (size_t)1 << 30;
        int r = gzread(s->gz, (unsigned char *)buf + *got, (unsigned)want);
        if (r < 0) {
            int code = 0;
            const char *why = gzerror(s->gz, &code);
            /* zlib's message starts with the path, which ours already names. */
            const size_t plen = strlen(s->path);
            if (strncmp(why, s->path, plen) == 0 && strncmp(why + plen, ": ", 2) == 0)
                why += plen + 2;
            lbk_error("%s: cannot decompress: %s", s->path,
                      code == Z_ERRNO ? strerror(errno) : why);
            /* Only corrupt data is the input's fault. */
            return code == Z_MEM_ERROR ? LBK_ERR_NOMEM
                   : code == Z_ERRNO   ? LBK_ERR_IO
                                       : LBK_ERR_INPUT;
        }
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    return LBK_OK;
}

static lbk_status stream_seek(idx_stream *s, uint64_t offset)
{
    if (s->file)
        return lbk_fmt_seek(s->file, s->path, offset);
    if (s->mem) {
        /* Past the end, like zlib's: the next read finds nothing. */
        s->mem_pos = offset < s->mem_len ? (size_t)offset : s->mem_len;
        return LBK_OK;
    }
    /* zlib emulates the seek by decompressing up to the offset. */
    LBK_FAIL_IF(offset > (uint64_t)LONG_MAX || gzseek(s->gz, (z_off_t)offset, SEEK_SET) < 0,
                LBK_ERR_INPUT, "%s: cannot seek to byte %llu of the decompressed data", s->path,
                (unsigned long long)offset);
    return LBK_OK;
}

static lbk_status read_header(idx_stream *s, idx_header *h)
{
    const char *path = s->path;
    unsigned char buf[4 * MAX_NDIMS];
    size_t got = 0;
    memset(h, 0, sizeof *h);

    LBK_TRY(stream_read(s, buf, 4, &got));
    LBK_FAIL_IF(got == 0, LBK_ERR_INPUT, "%s: empty file", path);
    LBK_FAIL_IF(got < 4, LBK_ERR_INPUT, "%s: truncated IDX header (%zu bytes)", path, got);
    h->type = buf[2];
    h->ndims = buf[3];
    h->value_bytes = type_bytes(h->type);
    LBK_FAIL_IF(
        buf[0] != 0 || buf[1] != 0 || h->value_bytes == 0 || h->ndims < 1 || h->ndims > MAX_NDIMS,
        LBK_ERR_INPUT, "%s: bad IDX magic number 0x%08x (expected 0x000008nn..0x00000Enn)", path,
        (unsigned)lbk_fmt_get_be32(buf));
    LBK_TRY(stream_read(s, buf, 4 * (size_t)h->ndims, &got));
    LBK_FAIL_IF(got < 4 * (size_t)h->ndims, LBK_ERR_INPUT,
                "%s: truncated IDX header (%d sizes expected)", path, h->ndims);
    h->rows = lbk_fmt_get_be32(buf);
    h->dim = 1;
    for (int i = 1; i < h->ndims; i++) {
        h->dim *= lbk_fmt_get_be32(buf + 4 * i);
        LBK_FAIL_IF(h->dim > INT_MAX, LBK_ERR_INPUT, "%s: IDX point dimension is too large",
                    path);
    }
    h->header_bytes = 4 + 4 * (uint64_t)h->ndims;
    return LBK_OK;
}

/* Where the declared data ends: header_bytes + rows * record bytes; false
 * when a header declares more than 64 bits can count (it lies). */
static bool data_end(const idx_header *h, uint64_t *end)
{
    const uint64_t rec = h->dim * h->value_bytes;
    if (h->rows != 0 && rec > (UINT64_MAX - h->header_bytes) / h->rows)
        return false;
    *end = h->header_bytes + h->rows * rec;
    return true;
}

/* A gzip file's length is known only after decompressing it, which the
 * reader does anyway (it checks the end: lbk_idx_read). The probe checks
 * only that the file could hold what its header declares (deflate packs at
 * most 1032 bytes into one), so that a tiny file whose header claims
 * billions of rows does not make every reader allocate for them first. */
#define DEFLATE_MAX_RATIO 1032u

static lbk_status gz_check_capacity(const idx_stream *s, const idx_header *h, uint64_t expect)
{
    const uint64_t data = expect - h->header_bytes;
    const uint64_t room = s->compressed_bytes > UINT64_MAX / DEFLATE_MAX_RATIO
                              ? UINT64_MAX
                              : s->compressed_bytes * DEFLATE_MAX_RATIO;
    LBK_FAIL_IF(data > room, LBK_ERR_INPUT,
                "%s: truncated: the header declares %llu rows (%llu bytes), more than a "
                "%llu-byte gzip file can hold",
                s->path, (unsigned long long)h->rows, (unsigned long long)data,
                (unsigned long long)s->compressed_bytes);
    return LBK_OK;
}

/* After the last declared record, the decompressed data must end. */
static lbk_status gz_check_end(idx_stream *s)
{
    unsigned char extra;
    size_t got = 0;
    LBK_TRY(stream_read(s, &extra, 1, &got));
    LBK_FAIL_IF(got != 0, LBK_ERR_INPUT,
                "%s: data continues after the last record the header declares", s->path);
    return LBK_OK;
}

/* What the caller expects of the header: a label file or a points file. */
static lbk_status check_header(const char *path, const idx_header *h, bool labels)
{
    LBK_FAIL_IF(labels && h->ndims != 1, LBK_ERR_INPUT,
                "%s: an IDX label file has 1 dimension, this one has %d", path, h->ndims);
    LBK_FAIL_IF(labels && !type_is_integer(h->type), LBK_ERR_INPUT,
                "%s: IDX labels must have an integer type, not type 0x%02X", path,
                (unsigned)h->type);
    LBK_FAIL_IF(!labels && h->ndims < 2, LBK_ERR_INPUT,
                "%s: an IDX points file has at least 2 dimensions, this one has 1 "
                "(a label file?)",
                path);
    LBK_FAIL_IF(h->dim == 0, LBK_ERR_INPUT, "%s: dimension 0", path);
    return LBK_OK;
}

/* A plain file can be checked whole at once, from its size. */
static lbk_status check_file_size(idx_stream *s, const idx_header *h, uint64_t expect)
{
    uint64_t size = 0;
    const uint64_t rec = h->dim * h->value_bytes;
    LBK_TRY(lbk_fmt_file_size(s->file, s->path, &size));
    LBK_FAIL_IF(size < expect, LBK_ERR_INPUT,
                "%s:%llu: truncated record (file is %llu bytes, the header promises %llu)",
                s->path, (unsigned long long)((size - h->header_bytes) / rec + 1),
                (unsigned long long)size, (unsigned long long)expect);
    LBK_FAIL_IF(size > expect, LBK_ERR_INPUT,
                "%s: %llu bytes after the last record the header declares", s->path,
                (unsigned long long)(size - expect));
    return LBK_OK;
}

/* Opens, reads the header and checks it against what the caller expects
 * and, for a plain file, that its size is what the header says; for a gzip
 * file in the probe, that it can hold that much (a reader decompresses it
 * and checks its end). The caller closes the stream, also on failure. */
static lbk_status open_checked(idx_stream *s, const char *path, bool labels, bool probe,
                               idx_header *h)
{
    uint64_t expect = 0;
    LBK_TRY(stream_open(s, path, !probe));
    LBK_TRY(read_header(s, h));
    LBK_TRY(check_header(path, h, labels));
    LBK_FAIL_IF(!data_end(h, &expect), LBK_ERR_INPUT,
                "%s: the IDX header declares %llu rows of dimension %llu, more than a file "
                "can hold",
                path, (unsigned long long)h->rows, (unsigned long long)h->dim);
    if (s->file)
        return check_file_size(s, h, expect);
    if (probe)
        return gz_check_capacity(s, h, expect);
    return LBK_OK;
}

lbk_status lbk_idx_probe(const char *path, bool labels, uint64_t *rows, int *dim)
{
    lbk_status st = LBK_OK;
    idx_stream s = {0};
    idx_header h;
    LBK_TRY_GOTO(st, open_checked(&s, path, labels, true, &h));
    *rows = h.rows;
    *dim = (int)h.dim;
cleanup:
    stream_close(&s);
    return st;
}

lbk_status lbk_idx_dtype(const char *path, lbk_dtype *type)
{
    lbk_status st = LBK_OK;
    idx_stream s = {0};
    idx_header h;
    LBK_TRY_GOTO(st, stream_open(&s, path, false));
    LBK_TRY_GOTO(st, read_header(&s, &h));
    *type = h.type == IDX_U8   ? LBK_DTYPE_UINT8
            : h.type == IDX_I8 ? LBK_DTYPE_INT8
                               : LBK_DTYPE_FLOAT32;
cleanup:
    stream_close(&s);
    return st;
}

static double decode_value(int type, const unsigned char *p)
{
    switch (type) {
    case IDX_U8: return p[0];
    case IDX_I8: return (signed char)p[0];
    case IDX_I16: return (int16_t)(uint16_t)(p[0] << 8 | p[1]);
    case IDX_I32: return (int32_t)lbk_fmt_get_be32(p);
    case IDX_F32: {
        uint32_t bits = lbk_fmt_get_be32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    default: {
        uint64_t bits = (uint64_t)lbk_fmt_get_be32(p) << 32 | lbk_fmt_get_be32(p + 4);
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    }
}

/* n records from buf into rows [row, row + n) of the output, which starts
 * at row lo: points checked finite, labels checked non-negative. */
static lbk_status decode_rows(const char *path, const idx_header *h, const unsigned char *buf,
                              uint64_t row, uint64_t n, uint64_t lo, lbk_dtype type, void *dest,
                              int32_t *labels)
{
    const uint64_t dim = h->dim;
    if (!labels && type != LBK_DTYPE_FLOAT32) {
        /* ubyte or sbyte at its own width: the bytes as they are. */
        memcpy((unsigned char *)dest + (row - lo) * dim, buf, (size_t)(n * dim));
        return LBK_OK;
    }
    float *points = dest;
    if (!labels && h->type == IDX_U8) {
        /* Bytes are always finite floats: the common image case, without
         * the per-value type switch and checks. */
        float *out = points + (row - lo) * dim;
        for (uint64_t v = 0; v < n * dim; v++)
            out[v] = (float)buf[v];
        return LBK_OK;
    }
    for (uint64_t i = 0; i < n; i++, row++) {
        for (uint64_t j = 0; j < dim; j++) {
            const double v = decode_value(h->type, buf + (i * dim + j) * h->value_bytes);
            LBK_TRY(lbk_fmt_store_value(path, row, j, v,
                                        points ? points + (row - lo) * dim + j : NULL,
                                        labels ? labels + (row - lo) : NULL));
        }
    }
    return LBK_OK;
}

lbk_status lbk_idx_read(const char *path, int dim, uint64_t lo, uint64_t hi, lbk_dtype type,
                        void *points, int32_t *labels)
{
    lbk_status st = LBK_OK;
    idx_stream s = {0};
    idx_header h;
    unsigned char *buf = NULL;

    LBK_TRY_GOTO(st, open_checked(&s, path, labels != NULL, false, &h));
    LBK_TRY_GOTO(st, lbk_fmt_check_dim(path, h.dim, dim));
    const uint64_t rec = h.dim * h.value_bytes;
    const uint64_t chunk_rows = lbk_fmt_chunk_rows(rec, hi - lo);
    LBK_TRY_GOTO(st, lbk_fmt_alloc((void **)&buf, chunk_rows, (size_t)rec));
    LBK_TRY_GOTO(st, stream_seek(&s, h.header_bytes + lo * rec));
    for (uint64_t r = lo; r < hi;) {
        uint64_t n = hi - r < chunk_rows ? hi - r : chunk_rows;
        size_t got = 0;
        LBK_TRY_GOTO(st, stream_read(&s, buf, (size_t)(n * rec), &got));
        if (got < n * rec) {
            lbk_error("%s:%llu: truncated record (unexpected end of file)", path,
                      (unsigned long long)(r + got / rec + 1));
            st = LBK_ERR_INPUT;
            goto cleanup;
        }
        LBK_TRY_GOTO(st, decode_rows(path, &h, buf, r, n, lo, type, points, labels));
        r += n;
    }
    if (stream_compressed(&s) && hi == h.rows)
        LBK_TRY_GOTO(st, gz_check_end(&s));
cleanup:
    lbk_alloc_large_free(buf);
    stream_close(&s);
    return st;
}

typedef struct {
    int type;
    const float *points;
    const int32_t *labels;
} values;

/* Values [at, at + n) into buf as IDX type `type`, big-endian (records are
 * single values here). */
static void encode_values(const void *ctx, uint64_t at, uint64_t n, unsigned char *buf)
{
    const values *v = ctx;
    const size_t vb = type_bytes(v->type);
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *p = buf + i * vb;
        if (v->type == IDX_U8) {
            *p = (unsigned char)(v->points ? v->points[at + i] : (float)v->labels[at + i]);
        } else if (v->type == IDX_I32) {
            lbk_fmt_put_be32(p, (uint32_t)v->labels[at + i]);
        } else {
            uint32_t bits;
            memcpy(&bits, &v->points[at + i], sizeof bits);
            lbk_fmt_put_be32(p, bits);
        }
    }
}

/* Header with sizes {rows, dim} (points) or {rows} (labels), then values. */
static lbk_status write_idx(const char *path, int type, int ndims, uint64_t rows, int dim,
                            const float *points, const int32_t *labels)
{
    unsigned char head[12];
    LBK_FAIL_IF(rows > UINT32_MAX, LBK_ERR_INPUT, "%s: IDX holds at most %u rows, not %llu", path,
                (unsigned)UINT32_MAX, (unsigned long long)rows);
    lbk_fmt_put_be32(head, (uint32_t)type << 8 | (uint32_t)ndims);
    lbk_fmt_put_be32(head + 4, (uint32_t)rows);
    lbk_fmt_put_be32(head + 8, (uint32_t)dim);
    const values v = {type, points, labels};
    return lbk_fmt_write_records(path, head, 4 + 4 * (size_t)ndims, type_bytes(type),
                                 rows * (uint64_t)dim, encode_values, &v);
}

lbk_status lbk_idx_write_points(const char *path, const float *points, uint64_t rows, int dim)
{
    /* Bytes when they suffice (the MNIST form, a quarter of the size). */
    bool bytes = true;
    for (uint64_t i = 0; i < rows * (uint64_t)dim && bytes; i++)
        bytes = points[i] >= 0.0f && points[i] <= 255.0f && points[i] == floorf(points[i]);
    return write_idx(path, bytes ? IDX_U8 : IDX_F32, 2, rows, dim, points, NULL);
}

lbk_status lbk_idx_write_labels(const char *path, const int32_t *labels, uint64_t rows)
{
    bool bytes = true;
    for (uint64_t i = 0; i < rows && bytes; i++)
        bytes = labels[i] >= 0 && labels[i] <= 255;
    return write_idx(path, bytes ? IDX_U8 : IDX_I32, 1, rows, 1, NULL, labels);
}
