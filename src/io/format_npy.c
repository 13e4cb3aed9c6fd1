/* NumPy .npy files: the magic "\x93NUMPY", a version, a header length
 * (uint16 in version 1, uint32 in versions 2 and 3, little-endian) and a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape':
 * (N, D)}, then the values in C order. Points are 2-D float16 (each value
 * exact in float32), float32, float64, uint8 or int8; labels are 1-D (or N x 1) integers. Rows have a fixed size
 * after the header, so a shard reads only its own bytes. Object arrays
 * (pickles), structured dtypes and Fortran order are refused with a message
 * that says what to save instead. */
#include "format_io.h"

#include "log.h"
#include "try.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* NumPy itself refuses headers above 10000 bytes unless told otherwise. */
#define MAX_HEADER 16384

typedef struct {
    char kind;   /* 'f', 'i', 'u' */
    size_t size; /* bytes per value */
    bool swap;   /* big-endian data */
    int ndims;
    uint64_t shape[2];
    uint64_t data_offset;
} npy_header;

/* ---- the header dict ------------------------------------------------------ */

typedef struct {
    const char *p, *end;
} cursor;

static void skip_blanks(cursor *c)
{
    while (c->p < c->end && isspace((unsigned char)*c->p))
        c->p++;
}

static bool take(cursor *c, char ch)
{
    skip_blanks(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted Python string into out (no escapes: dtype strings have none). */
static bool take_string(cursor *c, char *out, size_t size)
{
    skip_blanks(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return false;
    const char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        if (n + 1 >= size || *c->p == '\\')
            return false;
        out[n++] = *c->p++;
    }
    out[n] = '\0';
    return take(c, quote);
}

static bool take_word(cursor *c, const char *word)
{
    skip_blanks(c);
    const size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return false;
    c->p += n;
    return true;
}

/* (), (N,), (N, D) and beyond: *ndims counts them all, the first two kept.
 * Python 2 wrote long integers as 3L. */
static bool take_shape(cursor *c, npy_header *h)
{
    if (!take(c, '('))
        return false;
    h->ndims = 0;
    while (!take(c, ')')) {
        skip_blanks(c);
        if (c->p >= c->end || !isdigit((unsigned char)*c->p))
            return false;
        uint64_t v = 0;
        for (; c->p < c->end && isdigit((unsigned char)*c->p); c->p++) {
            if (v > (UINT64_MAX - 9) / 10)
                return false;
            v = v * 10 + (uint64_t)(*c->p - '0');
        }
        if (c->p < c->end && *c->p == 'L')
            c->p++;
        if (h->ndims < 2)
            h->shape[h->ndims] = v;
        h->ndims++;
        if (!take(c, ',') && !(skip_blanks(c), c->p < c->end && *c->p == ')'))
            return false;
    }
    return true;
}

/* descr: byte order, kind, size ('<f4', '|u1', '>f8'). */
static lbk_status parse_descr(const char *path, const char *d, npy_header *h)
{
    LBK_FAIL_IF(strchr(d, 'O') != NULL, LBK_ERR_INPUT,
                "%s: an object array (pickled Python objects) cannot be read; save a numeric "
                "array (e.g. np.save(path, x.astype(np.float32)))",
                path);
    const char order = d[0], kind = d[0] ? d[1] : '\0';
    char *end = NULL;
    const long size = kind ? strtol(d + 2, &end, 10) : 0;
    const bool known = (order == '<' || order == '>' || order == '|' || order == '=') &&
                       (kind == 'f' || kind == 'i' || kind == 'u') && end && *end == '\0' &&
                       (size == 1 || size == 2 || size == 4 || size == 8) &&
                       !(kind == 'f' && size < 2);
    LBK_FAIL_IF(!known, LBK_ERR_INPUT,
                "%s: unsupported NumPy dtype '%s' (points: <f2, <f4, <f8, |u1 or |i1; labels: "
                "integers)",
                path, d);
    h->kind = kind;
    h->size = (size_t)size;
    h->swap = order == '>' && size > 1;
    return LBK_OK;
}

/* One "'key': value" entry of the header dict. */
static lbk_status parse_entry(const char *path, cursor *c, npy_header *h, bool *fortran,
                              int *seen)
{
    char key[32], descr[64];
    LBK_FAIL_IF(!take_string(c, key, sizeof key) || !take(c, ':'), LBK_ERR_INPUT,
                "%s: malformed .npy header (expected 'key': value)", path);
    if (strcmp(key, "descr") == 0) {
        LBK_FAIL_IF(!take_string(c, descr, sizeof descr), LBK_ERR_INPUT,
                    "%s: unsupported NumPy dtype (a structured or record dtype?); save a plain "
                    "numeric array",
                    path);
        LBK_TRY(parse_descr(path, descr, h));
        *seen |= 1;
    } else if (strcmp(key, "fortran_order") == 0) {
        *fortran = take_word(c, "True");
        LBK_FAIL_IF(!*fortran && !take_word(c, "False"), LBK_ERR_INPUT,
                    "%s: malformed .npy header (fortran_order is not True or False)", path);
        *seen |= 2;
    } else if (strcmp(key, "shape") == 0) {
        LBK_FAIL_IF(!take_shape(c, h), LBK_ERR_INPUT,
                    "%s: malformed .npy header (shape is not a tuple of integers)", path);
        *seen |= 4;
    } else {
        lbk_error("%s: malformed .npy header (unknown key '%s')", path, key);
        return LBK_ERR_INPUT;
    }
    return LBK_OK;
}

static lbk_status parse_dict(const char *path, const char *text, size_t len, npy_header *h)
{
    cursor c = {text, text + len};
    bool fortran = false;
    int seen = 0;
    LBK_FAIL_IF(!take(&c, '{'), LBK_ERR_INPUT, "%s: malformed .npy header (no dict)", path);
    while (!take(&c, '}')) {
        LBK_TRY(parse_entry(path, &c, h, &fortran, &seen));
        LBK_FAIL_IF(!take(&c, ',') && !(skip_blanks(&c), c.p < c.end && *c.p == '}'),
                    LBK_ERR_INPUT, "%s: malformed .npy header (expected ',' or '}')", path);
    }
    LBK_FAIL_IF(seen != 7, LBK_ERR_INPUT,
                "%s: malformed .npy header (descr, fortran_order and shape are required)", path);
    /* Fortran order differs from C order only with two dimensions above 1. */
    LBK_FAIL_IF(fortran && h->ndims >= 2 && h->shape[0] > 1 && h->shape[1] > 1, LBK_ERR_INPUT,
                "%s: the array is in Fortran order; save a C-order array (np.save(path, "
                "np.ascontiguousarray(x)))",
                path);
    return LBK_OK;
}

/* ---- the file ------------------------------------------------------------- */

/* A file that is not .npy at all: say what it looks like. */
static lbk_status not_npy(const char *path, const unsigned char *b, size_t got)
{
    if (got >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
        lbk_error("%s: a Python pickle, not a .npy array; save the array with np.save", path);
    else if (got >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
        lbk_error("%s: an .npz archive, not a .npy array; save one array with np.save", path);
    else
        lbk_error("%s: not a .npy file (no \\x93NUMPY magic)", path);
    return LBK_ERR_INPUT;
}

/* The prefix and the dict: everything but the checks against the caller. */
static lbk_status read_header(FILE *f, const char *path, npy_header *h)
{
    unsigned char pre[12];
    size_t got = 0;
    memset(h, 0, sizeof *h);
    LBK_TRY(lbk_fmt_read(f, path, pre, sizeof pre, &got));
    LBK_FAIL_IF(got == 0, LBK_ERR_INPUT, "%s: empty file", path);
    if (got < 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
        return not_npy(path, pre, got);
    const int major = pre[6];
    LBK_FAIL_IF(major < 1 || major > 3, LBK_ERR_INPUT, "%s: unsupported .npy version %d.%d", path,
                major, pre[7]);
    const size_t prefix = major == 1 ? 10 : 12;
    LBK_FAIL_IF(got < prefix, LBK_ERR_INPUT, "%s: truncated .npy header", path);
    const uint32_t len =
        major == 1 ? (uint32_t)pre[8] | (uint32_t)pre[9] << 8 : lbk_fmt_get_le32(pre + 8);
    LBK_FAIL_IF(len > MAX_HEADER, LBK_ERR_INPUT, "%s: .npy header of %u bytes is too long", path,
                (unsigned)len);
    char text[MAX_HEADER + 1];
    LBK_TRY(lbk_fmt_seek(f, path, prefix));
    LBK_TRY(lbk_fmt_read(f, path, text, len, &got));
    LBK_FAIL_IF(got < len, LBK_ERR_INPUT, "%s: truncated .npy header (%u bytes promised)", path,
                (unsigned)len);
    text[len] = '\0';
    h->data_offset = prefix + len;
    return parse_dict(path, text, len, h);
}

/* What the caller expects: a points matrix or a label vector. */
static lbk_status check_shape(const char *path, npy_header *h, bool labels)
{
    if (labels) {
        LBK_FAIL_IF(h->kind == 'f', LBK_ERR_INPUT,
                    "%s: labels must have an integer dtype, not float", path);
        LBK_FAIL_IF(h->ndims < 1 || h->ndims > 2 || (h->ndims == 2 && h->shape[1] != 1),
                    LBK_ERR_INPUT, "%s: labels must have shape (N,) or (N, 1), not %d-D", path,
                    h->ndims);
        h->shape[1] = 1;
        return LBK_OK;
    }
    LBK_FAIL_IF(h->ndims != 2, LBK_ERR_INPUT,
                "%s: points must be a 2-D array (rows, dimension), not %d-D", path, h->ndims);
    LBK_FAIL_IF(h->kind != 'f' && h->size != 1, LBK_ERR_INPUT,
                "%s: points must be float16, float32, float64, uint8 or int8, not %c%zu", path,
                h->kind, h->size);
    LBK_FAIL_IF(h->shape[1] == 0, LBK_ERR_INPUT, "%s: dimension 0", path);
    LBK_FAIL_IF(h->shape[1] > INT_MAX, LBK_ERR_INPUT, "%s: dimension %llu is too large", path,
                (unsigned long long)h->shape[1]);
    return LBK_OK;
}

/* The file is exactly as long as the header says. */
static lbk_status check_size(FILE *f, const char *path, const npy_header *h)
{
    uint64_t size = 0;
    const uint64_t rec = h->shape[1] * h->size;
    LBK_TRY(lbk_fmt_file_size(f, path, &size));
    LBK_FAIL_IF(h->shape[0] != 0 && rec > (UINT64_MAX - h->data_offset) / h->shape[0],
                LBK_ERR_INPUT, "%s: the .npy header declares more data than a file can hold",
                path);
    const uint64_t expect = h->data_offset + h->shape[0] * rec;
    LBK_FAIL_IF(
        size < expect, LBK_ERR_INPUT,
        "%s:%llu: truncated record (file is %llu bytes, the header promises %llu)", path,
        (unsigned long long)((size > h->data_offset ? size - h->data_offset : 0) / rec + 1),
        (unsigned long long)size, (unsigned long long)expect);
    LBK_FAIL_IF(size > expect, LBK_ERR_INPUT,
                "%s: %llu bytes after the last row the header declares", path,
                (unsigned long long)(size - expect));
    return LBK_OK;
}

static lbk_status open_checked(const char *path, bool labels, FILE **f, npy_header *h)
{
    LBK_TRY(lbk_fmt_open_read(path, f));
    LBK_TRY(read_header(*f, path, h));
    LBK_TRY(check_shape(path, h, labels));
    return check_size(*f, path, h);
}

/* The checked header alone, the file closed again. */
static lbk_status header_of(const char *path, bool labels, npy_header *h)
{
    FILE *f = NULL;
    const lbk_status st = open_checked(path, labels, &f, h);
    if (f)
        fclose(f);
    return st;
}

lbk_status lbk_npy_probe(const char *path, bool labels, uint64_t *rows, int *dim)
{
    npy_header h;
    LBK_TRY(header_of(path, labels, &h));
    *rows = h.shape[0];
    *dim = (int)h.shape[1];
    return LBK_OK;
}

lbk_status lbk_npy_dtype(const char *path, lbk_dtype *type)
{
    npy_header h;
    LBK_TRY(header_of(path, false, &h));
    *type = h.kind == 'u' && h.size == 1   ? LBK_DTYPE_UINT8
            : h.kind == 'i' && h.size == 1 ? LBK_DTYPE_INT8
            : h.kind == 'f' && h.size == 2 ? LBK_DTYPE_FLOAT16
                                           : LBK_DTYPE_FLOAT32;
    return LBK_OK;
}

/* ---- values --------------------------------------------------------------- */

/* IEEE binary16: every value, subnormals included, is exact in a float. */
static double half_to_double(uint16_t bits)
{
    const int exponent = bits >> 10 & 0x1f;
    const double mantissa = bits & 0x3ff;
    double v = exponent == 0    ? ldexp(mantissa, -24)
               : exponent == 31 ? (mantissa != 0 ? NAN : INFINITY)
                                : ldexp(mantissa + 1024, exponent - 25);
    return bits & 0x8000 ? -v : v;
}

static double decode(const npy_header *h, const unsigned char *p)
{
    unsigned char b[8];
    for (size_t i = 0; i < h->size; i++)
        b[i] = h->swap ? p[h->size - 1 - i] : p[i];
    if (h->kind == 'f' && h->size == 2)
        return half_to_double((uint16_t)(b[0] | b[1] << 8));
    if (h->kind == 'f' && h->size == 4) {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    if (h->kind == 'f') {
        double d;
        memcpy(&d, b, 8);
        return d;
    }
    uint64_t u = 0;
    for (size_t i = h->size; i-- > 0;)
        u = u << 8 | b[i];
    if (h->kind == 'u')
        return (double)u;
    const uint64_t sign = (uint64_t)1 << (8 * h->size - 1);
    return u & sign ? -(double)((~u & (sign - 1)) + 1) : (double)u;
}

/* Where a read's rows go (lbk_fmt_read_records): points checked finite as
 * floats, labels non-negative int32. */
typedef struct {
    const char *path;
    const npy_header *h;
    uint64_t lo;
    lbk_dtype type;
    void *points;
    int32_t *labels;
} sink;

static lbk_status decode_rows(const void *ctx, const unsigned char *buf, uint64_t row, uint64_t n)
{
    const sink *o = ctx;
    const uint64_t dim = o->h->shape[1], lo = o->lo;
    for (uint64_t i = 0; i < n; i++, row++)
        for (uint64_t j = 0; j < dim; j++) {
            const unsigned char *p = buf + (i * dim + j) * o->h->size;
            const uint64_t at = (row - lo) * dim + j;
            if (o->points && o->type == LBK_DTYPE_FLOAT16) {
                const uint16_t bits =
                    (uint16_t)(o->h->swap ? p[0] << 8 | p[1] : p[1] << 8 | p[0]);
                LBK_TRY(lbk_fmt_store_half(o->path, row, j, bits, o->points, at));
                continue;
            }
            const double v = decode(o->h, p);
            if (o->points)
                LBK_TRY(lbk_fmt_store_point(o->path, row, j, v, o->type, o->points, at));
            else
                LBK_TRY(lbk_fmt_store_value(o->path, row, j, v, NULL, o->labels + (row - lo)));
        }
    return LBK_OK;
}

lbk_status lbk_npy_read(const char *path, int dim, uint64_t lo, uint64_t hi, lbk_dtype type,
                        void *points, int32_t *labels)
{
    lbk_status st = LBK_OK;
    FILE *f = NULL;
    npy_header h;
    LBK_TRY_GOTO(st, open_checked(path, labels != NULL, &f, &h));
    LBK_TRY_GOTO(st, lbk_fmt_check_dim(path, h.shape[1], dim));
    const sink out = {path, &h, lo, type, points, labels};
    st = lbk_fmt_read_records(f, path, h.data_offset, h.shape[1] * h.size, lo, hi, decode_rows,
                              &out);
cleanup:
    if (f)
        fclose(f);
    return st;
}

/* ---- regression targets --------------------------------------------------- */

static lbk_status open_targets(const char *path, FILE **f, npy_header *h)
{
    LBK_TRY(lbk_fmt_open_read(path, f));
    LBK_TRY(read_header(*f, path, h));
    LBK_FAIL_IF(h->kind != 'f', LBK_ERR_INPUT,
                "%s: targets must be float32 or float64, not %c%zu (save x.astype(np.float64))",
                path, h->kind, h->size);
    LBK_FAIL_IF(h->ndims < 1 || h->ndims > 2 || (h->ndims == 2 && h->shape[1] != 1),
                LBK_ERR_INPUT, "%s: targets must have shape (N,) or (N, 1), not %d-D", path,
                h->ndims);
    h->shape[1] = 1;
    return check_size(*f, path, h);
}

lbk_status lbk_npy_targets_probe(const char *path, uint64_t *rows)
{
    FILE *f = NULL;
    npy_header h;
    const lbk_status st = open_targets(path, &f, &h);
    if (f)
        fclose(f);
    LBK_TRY(st);
    *rows = h.shape[0];
    return LBK_OK;
}

typedef struct {
    const char *path;
    const npy_header *h;
    uint64_t lo;
    double *targets;
} targets_sink;

static lbk_status decode_targets(const void *ctx, const unsigned char *buf, uint64_t row,
                                 uint64_t n)
{
    const targets_sink *o = ctx;
    for (uint64_t i = 0; i < n; i++, row++) {
        const double v = decode(o->h, buf + i * o->h->size);
        LBK_FAIL_IF(!isfinite(v), LBK_ERR_INPUT, "%s:%llu: target is not a finite number (%g)",
                    o->path, (unsigned long long)(row + 1), v);
        o->targets[row - o->lo] = v;
    }
    return LBK_OK;
}

lbk_status lbk_npy_targets_read(const char *path, uint64_t lo, uint64_t hi, double *targets)
{
    lbk_status st = LBK_OK;
    FILE *f = NULL;
    npy_header h;
    LBK_TRY_GOTO(st, open_targets(path, &f, &h));
    const targets_sink out = {path, &h, lo, targets};
    st = lbk_fmt_read_records(f, path, h.data_offset, h.size, lo, hi, decode_targets, &out);
cleanup:
    if (f)
        fclose(f);
    return st;
}

/* ---- writing -------------------------------------------------------------- */

size_t lbk_npy_header(const char *descr, uint64_t rows, uint64_t cols, bool vector,
                      unsigned char *buf)
{
    char dict[LBK_DATASET_NPY_HEADER_MAX];
    int n = vector ? snprintf(dict, sizeof dict,
                              "{'descr': '%s', 'fortran_order': False, 'shape': (%llu,), }",
                              descr, (unsigned long long)rows)
                   : snprintf(dict, sizeof dict,
                              "{'descr': '%s', 'fortran_order': False, 'shape': (%llu, %llu), }",
                              descr, (unsigned long long)rows, (unsigned long long)cols);
    /* Version 1.0: 10 bytes, then the dict padded with spaces and ended by
     * a newline so that the data starts on a multiple of 64 bytes. */
    const size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((total - 10) & 0xff);
    buf[9] = (unsigned char)((total - 10) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', total - 11 - (size_t)n);
    buf[total - 1] = '\n';
    return total;
}

lbk_status lbk_npy_write(const char *path, const float *points, const int32_t *labels,
                         uint64_t rows, int dim)
{
    lbk_status st = LBK_OK;
    FILE *file = NULL;
    unsigned char head[LBK_DATASET_NPY_HEADER_MAX];
    const size_t len = lbk_npy_header(points ? "<f4" : "<i4", rows, (uint64_t)dim, !points, head);
    LBK_TRY(lbk_fmt_open_write(path, &file));
    LBK_TRY_GOTO(st, lbk_fmt_write(file, path, head, len));
    /* Little-endian hosts only, as the TEXMEX writer: the bytes as they are. */
    LBK_TRY_GOTO(st,
                 lbk_fmt_write(file, path, points ? (const void *)points : (const void *)labels,
                               (size_t)(rows * (uint64_t)dim * 4)));
    st = lbk_fmt_close_write(file, path);
    file = NULL;
cleanup:
    if (file)
        fclose(file);
    return st;
}
