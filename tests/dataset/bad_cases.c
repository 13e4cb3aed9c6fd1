/* Malformed inputs: each must fail with LBK_ERR_INPUT and exactly one error
 * line naming the file, the 1-based row and (where it applies) the column.
 * Expected messages use '@' for the scratch directory; a trailing '*' makes
 * the comparison a prefix match. */
#include "cases.h"
#include "lbk_test.h"
#include "testkit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    void (*setup)(lbk_job_input_spec *spec);
    uint64_t lo, hi;
    const char *message;
} bad_case;

static void set_path(lbk_job_input_spec *spec, const char *name)
{
    *spec = tk_spec(tk_path(name));
}

static void text_file(lbk_job_input_spec *spec, const char *name, const char *text)
{
    set_path(spec, name);
    tk_write_text(spec->path, text);
}

static void bytes_file(lbk_job_input_spec *spec, const char *name, tk_bytes *w)
{
    set_path(spec, name);
    tk_write_file(spec->path, w->b, w->n);
    tk_free(w);
}

/* rows records of dimension dim, values row*10 + col. */
static void fvecs_records(tk_bytes *w, int rows, int dim)
{
    for (int r = 0; r < rows; r++) {
        tk_le32(w, (uint32_t)dim);
        for (int j = 0; j < dim; j++)
            tk_f32le(w, (float)(r * 10 + j));
    }
}

static void labels_file(lbk_job_input_spec *spec, const char *name, const char *text)
{
    tk_bytes w = {0};
    fvecs_records(&w, 3, 2);
    bytes_file(spec, "p3.fvecs", &w);
    const char *path = tk_path(name);
    tk_write_text(path, text);
    snprintf(spec->labels, sizeof spec->labels, "%s", path);
}

static void ivecs_labels(lbk_job_input_spec *spec, const char *name, int dim, int32_t second)
{
    tk_bytes w = {0};
    fvecs_records(&w, 3, 2);
    bytes_file(spec, "p3.fvecs", &w);
    for (int r = 0; r < 3; r++) {
        tk_le32(&w, (uint32_t)dim);
        for (int j = 0; j < dim; j++)
            tk_le32(&w, (uint32_t)(r == 1 ? second : r));
    }
    const char *path = tk_path(name);
    tk_write_file(path, w.b, w.n);
    tk_free(&w);
    snprintf(spec->labels, sizeof spec->labels, "%s", path);
}

/* MNIST-like header with the given magic and sizes, then n data bytes. */
static void idx_file(lbk_job_input_spec *spec, const char *name, uint32_t magic, int ndims,
                     const uint32_t *sizes, size_t n)
{
    tk_bytes w = {0};
    tk_be32(&w, magic);
    for (int i = 0; i < ndims; i++)
        tk_be32(&w, sizes[i]);
    for (size_t i = 0; i < n; i++)
        tk_u8(&w, (unsigned)(i % 256));
    bytes_file(spec, name, &w);
}

static void fvecs_truncated(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    fvecs_records(&w, 2, 3);
    for (int i = 0; i < 5; i++)
        tk_u8(&w, 0);
    bytes_file(s, "t.fvecs", &w);
}

static void fvecs_dim_mismatch(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    fvecs_records(&w, 3, 2);
    w.b[12] = 5; /* the second record's dimension field */
    bytes_file(s, "d.fvecs", &w);
}

static void fvecs_nan(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    fvecs_records(&w, 1, 2);
    tk_le32(&w, 2);
    tk_f32le(&w, 1.0f);
    tk_f32le(&w, NAN);
    bytes_file(s, "n.fvecs", &w);
}

static void fvecs_inf_in_shard(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    fvecs_records(&w, 2, 2);
    tk_le32(&w, 2);
    tk_f32le(&w, -INFINITY);
    tk_f32le(&w, 1.0f);
    fvecs_records(&w, 1, 2);
    bytes_file(s, "i.fvecs", &w);
}

static void fvecs_dim0(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_le32(&w, 0);
    tk_le32(&w, 0);
    bytes_file(s, "z.fvecs", &w);
}

static void empty_file(lbk_job_input_spec *s) { text_file(s, "e.fvecs", ""); }
static void missing_file(lbk_job_input_spec *s) { set_path(s, "missing.fvecs"); }

static void bvecs_truncated(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_le32(&w, 4);
    for (int i = 0; i < 4 + 6; i++)
        tk_u8(&w, 4);
    bytes_file(s, "b.bvecs", &w);
}

static void csv_ragged(lbk_job_input_spec *s)
{
    text_file(s, "r.csv", "1,2,3\n4,5,6\n7,8\n9,9,9\n");
}
static void csv_not_number(lbk_job_input_spec *s)
{
    text_file(s, "nn.csv", "x,y\n1,2\n3,4\n5,abc\n");
}
static void csv_inf(lbk_job_input_spec *s) { text_file(s, "inf.csv", "1,2\ninf,3\n"); }
static void csv_nan(lbk_job_input_spec *s) { text_file(s, "nan.csv", "a,b\r\n1, nan \r\n"); }
static void csv_too_big(lbk_job_input_spec *s) { text_file(s, "big.csv", "1e39,2\n"); }

static void csv_empty_field(lbk_job_input_spec *s)
{
    text_file(s, "ef.csv", "1,,3\n");
    s->header = 0;
}

static void csv_label_not_integer(lbk_job_input_spec *s)
{
    text_file(s, "lf.csv", "a,b,l\n1,2,3\n1,2,1.5\n");
    s->label_column = 2;
}

static void csv_label_negative(lbk_job_input_spec *s)
{
    text_file(s, "ln.csv", "1,2,-1\n");
    s->header = 0;
    s->label_column = 2;
}

static void csv_blank_middle(lbk_job_input_spec *s)
{
    text_file(s, "bl.csv", "1,2\n3,4\n\n5,6\n");
}

static void csv_label_column_missing(lbk_job_input_spec *s)
{
    text_file(s, "lc.csv", "1,2,3\n");
    s->label_column = 5;
}

static void csv_header_only(lbk_job_input_spec *s) { text_file(s, "ho.csv", "x,y\n\n"); }

static void text_labels_negative(lbk_job_input_spec *s)
{
    labels_file(s, "neg.txt", "1\n2\n-2\n");
}
static void text_labels_word(lbk_job_input_spec *s) { labels_file(s, "w.txt", "1\ncat\n0\n"); }
static void labels_count(lbk_job_input_spec *s) { labels_file(s, "few.txt", "1\n2\n"); }
static void ivecs_labels_negative(lbk_job_input_spec *s) { ivecs_labels(s, "neg.ivecs", 1, -1); }
static void ivecs_labels_dim2(lbk_job_input_spec *s) { ivecs_labels(s, "l2.ivecs", 2, 1); }

static void idx_bad_magic(lbk_job_input_spec *s)
{
    idx_file(s, "m.idx", 0x01020803, 3, (const uint32_t[]){1, 2, 2}, 4);
}

static void idx_truncated(lbk_job_input_spec *s)
{
    idx_file(s, "t-ubyte", 0x00000803, 3, (const uint32_t[]){3, 2, 2}, 10);
}

static void idx_gz_truncated(lbk_job_input_spec *s)
{
    idx_file(s, "plain-ubyte", 0x00000803, 3, (const uint32_t[]){3, 2, 2}, 10);
    const char *gz = tk_path("t.idx.gz");
    tk_gzip(s->path, gz);
    set_path(s, "t.idx.gz");
}

/* Two bytes past the three records the header declares, inside the gzip
 * stream: only decompressing to the end finds them (the reader, not the
 * probe). */
static void idx_gz_trailing(lbk_job_input_spec *s)
{
    idx_file(s, "long-ubyte", 0x00000803, 3, (const uint32_t[]){3, 2, 2}, 14);
    const char *gz = tk_path("x.idx.gz");
    tk_gzip(s->path, gz);
    set_path(s, "x.idx.gz");
}

/* A damaged checksum: the whole-file decompressor declines the file and the
 * streaming one names what is wrong. */
static void idx_gz_bad_crc(lbk_job_input_spec *s)
{
    idx_file(s, "crc-ubyte", 0x00000803, 3, (const uint32_t[]){3, 2, 2}, 12);
    const char *gz = tk_path("c.idx.gz");
    tk_gzip(s->path, gz);
    size_t n = 0;
    char *data = tk_read_file(gz, &n);
    data[n - 8] ^= 0x5a; /* the CRC-32, first of the trailer's 8 bytes */
    tk_write_file(gz, data, n);
    free(data);
    set_path(s, "c.idx.gz");
}

static void idx_dim0(lbk_job_input_spec *s)
{
    idx_file(s, "d0.idx", 0x00000803, 3, (const uint32_t[]){3, 0, 28}, 0);
}

static void idx_labels_as_points(lbk_job_input_spec *s)
{
    idx_file(s, "lbl-ubyte", 0x00000801, 1, (const uint32_t[]){3}, 3);
}

static void range_past_end(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    fvecs_records(&w, 3, 2);
    bytes_file(s, "p3.fvecs", &w);
}

static void unknown_format(lbk_job_input_spec *s) { text_file(s, "data.bin", "1,2\n"); }

/* A .npy file: header dict, then n little-endian float32 values (or bytes). */
static void npy_file(lbk_job_input_spec *s, const char *name, const char *dict, int values,
                     float value)
{
    tk_bytes w = {0};
    tk_npy_header(&w, 1, dict);
    for (int i = 0; i < values; i++)
        tk_f32le(&w, value);
    bytes_file(s, name, &w);
}

static void npy_fortran(lbk_job_input_spec *s)
{
    npy_file(s, "f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", 6, 1);
}

static void npy_object(lbk_job_input_spec *s)
{
    npy_file(s, "o.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (3, 2), }", 6, 1);
}

static void npy_structured(lbk_job_input_spec *s)
{
    npy_file(s, "st.npy",
             "{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (3,), }",
             6, 1);
}

static void npy_pickle(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    const unsigned char pickle[] = {0x80, 0x04, 0x95, 0x10, 0x00, 0x00, 0x00, 0x00,
                                    0x00, 0x00, 0x00, 0x8c, 0x05, 'n',  'u',  'm'};
    for (size_t i = 0; i < sizeof pickle; i++)
        tk_u8(&w, pickle[i]);
    bytes_file(s, "p.npy", &w);
}

static void npy_npz(lbk_job_input_spec *s) { text_file(s, "z.npy", "PK\x03\x04 not an array"); }
static void npy_no_magic(lbk_job_input_spec *s) { text_file(s, "m.npy", "1,2,3\n4,5,6\n"); }

static void npy_3d(lbk_job_input_spec *s)
{
    npy_file(s, "3d.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", 8, 1);
}

static void npy_1d_points(lbk_job_input_spec *s)
{
    npy_file(s, "1d.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 3, 1);
}

static void npy_int32_points(lbk_job_input_spec *s)
{
    npy_file(s, "i4.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }", 6, 1);
}

static void npy_truncated(lbk_job_input_spec *s)
{
    npy_file(s, "t.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 5, 1);
}

static void npy_trailing(lbk_job_input_spec *s)
{
    npy_file(s, "x.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 7, 1);
}

static void npy_nan(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_npy_header(&w, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }");
    for (int i = 0; i < 6; i++)
        tk_f32le(&w, i == 3 ? NAN : 1.0f);
    bytes_file(s, "n.npy", &w);
}

static void npy_no_shape(lbk_job_input_spec *s)
{
    npy_file(s, "ns.npy", "{'descr': '<f4', 'fortran_order': False}", 6, 1);
}

static void npy_labels(lbk_job_input_spec *s, const char *name, const char *dict, int64_t second)
{
    tk_bytes w = {0};
    fvecs_records(&w, 3, 2);
    bytes_file(s, "p3.fvecs", &w);
    tk_npy_header(&w, 1, dict);
    for (int i = 0; i < 3; i++) {
        const int64_t v = i == 1 ? second : i;
        tk_le32(&w, (uint32_t)v);
        tk_le32(&w, (uint32_t)((uint64_t)v >> 32));
    }
    const char *path = tk_path(name);
    tk_write_file(path, w.b, w.n);
    tk_free(&w);
    snprintf(s->labels, sizeof s->labels, "%s", path);
}

static void npy_float_labels(lbk_job_input_spec *s)
{
    npy_labels(s, "fl.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 0);
}

static void npy_negative_label(lbk_job_input_spec *s)
{
    npy_labels(s, "nl.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", -4);
}

static void npy_labels_2d(lbk_job_input_spec *s)
{
    npy_labels(s, "l2.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }", 1);
}

/* A big-ann file: header rows, dim, then n float32 values. */
static void bin_file(lbk_job_input_spec *s, const char *name, uint32_t rows, uint32_t dim, int n)
{
    tk_bytes w = {0};
    tk_le32(&w, rows);
    tk_le32(&w, dim);
    for (int i = 0; i < n; i++)
        tk_f32le(&w, (float)i);
    bytes_file(s, name, &w);
}

static void fbin_truncated(lbk_job_input_spec *s) { bin_file(s, "t.fbin", 3, 4, 10); }
static void fbin_trailing(lbk_job_input_spec *s) { bin_file(s, "x.fbin", 2, 4, 9); }
static void fbin_dim0(lbk_job_input_spec *s) { bin_file(s, "d0.fbin", 3, 0, 0); }
static void fbin_header_lies(lbk_job_input_spec *s)
{
    bin_file(s, "big.fbin", 1000000000u, 2, 2);
}
static void fbin_header_overflow(lbk_job_input_spec *s)
{
    bin_file(s, "huge.fbin", 4000000000u, 2000000000u, 2);
}

static void fbin_short_header(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_le32(&w, 3);
    bytes_file(s, "h.fbin", &w);
}

static void fbin_inf(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_le32(&w, 2);
    tk_le32(&w, 2);
    tk_f32le(&w, 1);
    tk_f32le(&w, 2);
    tk_f32le(&w, INFINITY);
    tk_f32le(&w, 4);
    bytes_file(s, "i.fbin", &w);
}

static void ibin_labels(lbk_job_input_spec *s, const char *name, uint32_t dim, int32_t second)
{
    tk_bytes w = {0};
    fvecs_records(&w, 3, 2);
    bytes_file(s, "p3.fvecs", &w);
    tk_le32(&w, 3);
    tk_le32(&w, dim);
    for (uint32_t i = 0; i < 3 * dim; i++)
        tk_le32(&w, (uint32_t)(i == 1 ? second : (int32_t)i));
    const char *path = tk_path(name);
    tk_write_file(path, w.b, w.n);
    tk_free(&w);
    snprintf(s->labels, sizeof s->labels, "%s", path);
}

static void ibin_labels_dim2(lbk_job_input_spec *s) { ibin_labels(s, "l2.ibin", 2, 1); }
static void ibin_negative_label(lbk_job_input_spec *s) { ibin_labels(s, "n.ibin", 1, -3); }

/* reference.type uint8 on a float file, int8 on a uint8 one. */
static void type_uint8_on_fvecs(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    fvecs_records(&w, 1, 2);
    bytes_file(s, "ty.fvecs", &w);
    s->type = LBK_DTYPE_UINT8;
}

static void type_int8_on_u8bin(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_le32(&w, 1);
    tk_le32(&w, 2);
    tk_u8(&w, 1);
    tk_u8(&w, 2);
    bytes_file(s, "ty.u8bin", &w);
    s->type = LBK_DTYPE_INT8;
}

/* A float16 infinity read at its own width. */
static void npy_f2_inf(lbk_job_input_spec *s)
{
    tk_bytes w = {0};
    tk_npy_header(&w, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }");
    const uint16_t v[4] = {0x3c00, 0x4000, 0x7c00, 0x0000};
    for (int i = 0; i < 4; i++) {
        tk_u8(&w, v[i] & 0xff);
        tk_u8(&w, v[i] >> 8);
    }
    bytes_file(s, "inf.npy", &w);
    s->type = LBK_DTYPE_AUTO;
}

static const bad_case bad[] = {
    {"type_uint8_on_fvecs", type_uint8_on_fvecs, 0, 1,
     "@/ty.fvecs: reference.type is uint8, but the file's values read as float32; give "
     "reference.type: auto or float32"},
    {"type_int8_on_u8bin", type_int8_on_u8bin, 0, 1,
     "@/ty.u8bin: reference.type is int8, but the file's values read as uint8; give "
     "reference.type: auto or float32"},
    {"npy_f2_inf", npy_f2_inf, 0, 2,
     "@/inf.npy:2:1: value is not a finite float16 (bits 0x7c00)"},
    {"fvecs_truncated", fvecs_truncated, 0, 1,
     "@/t.fvecs:3: truncated record (file is 37 bytes, not a multiple of the 16-byte record "
     "of dimension 3)"},
    {"fvecs_dim_mismatch", fvecs_dim_mismatch, 0, 3,
     "@/d.fvecs:2: record has dimension 5, but the first record has 2"},
    {"fvecs_nan", fvecs_nan, 0, 2, "@/n.fvecs:2:2: value is not finite (nan)"},
    {"fvecs_inf_in_shard", fvecs_inf_in_shard, 2, 4, "@/i.fvecs:3:1: value is not finite (-inf)"},
    {"fvecs_dim0", fvecs_dim0, 0, 1, "@/z.fvecs:1: invalid dimension 0 (must be at least 1)"},
    {"empty_file", empty_file, 0, 0, "@/e.fvecs: empty file"},
    {"missing_file", missing_file, 0, 0,
     "@/missing.fvecs: cannot open: No such file or directory"},
    {"bvecs_truncated", bvecs_truncated, 0, 1,
     "@/b.bvecs:2: truncated record (file is 14 bytes, not a multiple of the 8-byte record of "
     "dimension 4)"},
    {"csv_ragged", csv_ragged, 0, 1, "@/r.csv:3: expected 3 fields (as on line 1), found 2"},
    {"csv_not_number", csv_not_number, 0, 3, "@/nn.csv:4:2: not a number: 'abc'"},
    {"csv_inf", csv_inf, 0, 2, "@/inf.csv:2:1: not a finite number: 'inf'"},
    {"csv_nan", csv_nan, 0, 1, "@/nan.csv:2:2: not a finite number: 'nan'"},
    {"csv_too_big", csv_too_big, 0, 1, "@/big.csv:1:1: too large for a float: '1e39'"},
    {"csv_empty_field", csv_empty_field, 0, 1, "@/ef.csv:1:2: empty field"},
    {"csv_label_not_integer", csv_label_not_integer, 1, 2,
     "@/lf.csv:3:3: label is not an integer: '1.5'"},
    {"csv_label_negative", csv_label_negative, 0, 1, "@/ln.csv:1:3: negative label: '-1'"},
    {"csv_blank_middle", csv_blank_middle, 0, 0,
     "@/bl.csv:3: empty line before the end of the file"},
    {"csv_label_column_missing", csv_label_column_missing, 0, 0,
     "@/lc.csv:1: label column 6 does not exist: the line has 3 fields"},
    {"csv_header_only", csv_header_only, 0, 0, "@/ho.csv: no data rows after the header line"},
    {"text_labels_negative", text_labels_negative, 0, 3, "@/neg.txt:3: negative label: '-2'"},
    {"text_labels_word", text_labels_word, 1, 2, "@/w.txt:2: label is not a number: 'cat'"},
    {"labels_count", labels_count, 0, 0, "@/few.txt: 2 labels, but @/p3.fvecs has 3 points"},
    {"ivecs_labels_negative", ivecs_labels_negative, 0, 3, "@/neg.ivecs:2: negative label -1"},
    {"ivecs_labels_dim2", ivecs_labels_dim2, 0, 0,
     "@/l2.ivecs:1: a label file has dimension 1, this one has 2"},
    {"idx_bad_magic", idx_bad_magic, 0, 1,
     "@/m.idx: bad IDX magic number 0x01020803 (expected 0x000008nn..0x00000Enn)"},
    {"idx_empty_shard_checks_header", idx_bad_magic, 0, 0, "@/m.idx: bad IDX magic number*"},
    {"idx_truncated", idx_truncated, 0, 1,
     "@/t-ubyte:3: truncated record (file is 26 bytes, the header promises 28)"},
    {"idx_gz_truncated", idx_gz_truncated, 1, 3,
     "@/t.idx.gz:3: truncated record (unexpected end of file)"},
    {"idx_gz_trailing", idx_gz_trailing, 0, 3,
     "@/x.idx.gz: data continues after the last record the header declares"},
    {"idx_gz_bad_crc", idx_gz_bad_crc, 0, 3,
     "@/c.idx.gz: cannot decompress: incorrect data check"},
    {"idx_dim0", idx_dim0, 0, 0, "@/d0.idx: dimension 0"},
    {"idx_labels_as_points", idx_labels_as_points, 0, 0,
     "@/lbl-ubyte: an IDX points file has at least 2 dimensions, this one has 1 (a label file?)"},
    {"range_past_end", range_past_end, 1, 4,
     "@/p3.fvecs: rows [1, 4) requested, but the file has 3 rows"},
    {"unknown_format", unknown_format, 0, 0,
     "@/data.bin: cannot tell the points format from the file name*"},
    {"npy_fortran", npy_fortran, 0, 1,
     "@/f.npy: the array is in Fortran order; save a C-order array (np.save(path, "
     "np.ascontiguousarray(x)))"},
    {"npy_object", npy_object, 0, 1,
     "@/o.npy: an object array (pickled Python objects) cannot be read; save a numeric array*"},
    {"npy_structured", npy_structured, 0, 1,
     "@/st.npy: unsupported NumPy dtype (a structured or record dtype?); save a plain numeric "
     "array"},
    {"npy_pickle", npy_pickle, 0, 1,
     "@/p.npy: a Python pickle, not a .npy array; save the array with np.save"},
    {"npy_npz", npy_npz, 0, 1,
     "@/z.npy: an .npz archive, not a .npy array; save one array with np.save"},
    {"npy_no_magic", npy_no_magic, 0, 1, "@/m.npy: not a .npy file (no \\x93NUMPY magic)"},
    {"npy_3d", npy_3d, 0, 1, "@/3d.npy: points must be a 2-D array (rows, dimension), not 3-D"},
    {"npy_1d_points", npy_1d_points, 0, 1,
     "@/1d.npy: points must be a 2-D array (rows, dimension), not 1-D"},
    {"npy_int32_points", npy_int32_points, 0, 1,
     "@/i4.npy: points must be float16, float32, float64, uint8 or int8, not i4"},
    {"npy_truncated", npy_truncated, 0, 1,
     "@/t.npy:3: truncated record (file is 148 bytes, the header promises 152)"},
    {"npy_trailing", npy_trailing, 0, 1,
     "@/x.npy: 4 bytes after the last row the header declares"},
    {"npy_nan", npy_nan, 1, 3, "@/n.npy:2:2: value is not a finite float (nan)"},
    {"npy_no_shape", npy_no_shape, 0, 1,
     "@/ns.npy: malformed .npy header (descr, fortran_order and shape are required)"},
    {"npy_float_labels", npy_float_labels, 0, 3,
     "@/fl.npy: labels must have an integer dtype, not float"},
    {"npy_negative_label", npy_negative_label, 0, 3, "@/nl.npy:2: negative label -4"},
    {"npy_labels_2d", npy_labels_2d, 0, 3,
     "@/l2.npy: labels must have shape (N,) or (N, 1), not 2-D"},
    {"fbin_truncated", fbin_truncated, 0, 1,
     "@/t.fbin:3: truncated record (file is 48 bytes, the header promises 56)"},
    {"fbin_trailing", fbin_trailing, 0, 1,
     "@/x.fbin: 4 bytes after the last row the header declares"},
    {"fbin_dim0", fbin_dim0, 0, 1, "@/d0.fbin: dimension 0"},
    {"fbin_header_lies", fbin_header_lies, 0, 1,
     "@/big.fbin:2: truncated record (file is 16 bytes, the header promises 8000000008)"},
    {"fbin_header_overflow", fbin_header_overflow, 0, 1,
     "@/huge.fbin: the header declares 4000000000 rows of dimension 2000000000, more than a "
     "file can hold"},
    {"fbin_short_header", fbin_short_header, 0, 1,
     "@/h.fbin: truncated header (4 bytes; a fbin file starts with uint32 rows, uint32 dim)"},
    {"fbin_inf", fbin_inf, 0, 2, "@/i.fbin:2:1: value is not finite (inf)"},
    {"ibin_labels_dim2", ibin_labels_dim2, 0, 3,
     "@/l2.ibin: a label file has dimension 1, this one has 2"},
    {"ibin_negative_label", ibin_negative_label, 0, 3, "@/n.ibin:2: negative label -3"},
};

/* '@' -> scratch directory. */
static char *expand(const char *message)
{
    size_t n = strlen(message) + 1;
    for (const char *p = message; *p; p++)
        n += *p == '@' ? strlen(tk_dir()) : 0;
    char *out = malloc(n), *o = out;
    for (const char *p = message; *p; p++) {
        if (*p == '@') {
            strcpy(o, tk_dir());
            o += strlen(o);
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

/* Reading the fixture fails with LBK_ERR_INPUT, returns nothing, and says
 * why in exactly one line: "lbknn: error: " and the expected message (or,
 * for a message ending in '*', a line that starts so). */
static void run_bad(const void *row)
{
    const bad_case *c = row;
    lbk_job_input_spec spec;
    c->setup(&spec);
    lbk_dataset d = {.rows = 99};
    tk_capture_begin();
    const lbk_status st = lbk_dataset_read(&spec, c->lo, c->hi, &d);
    char *err = tk_capture_end();
    LBK_EXPECT_EQ_INT(st, LBK_ERR_INPUT);
    LBK_EXPECT_TRUE(d.points == NULL);
    LBK_EXPECT_TRUE(d.raw == NULL);
    LBK_EXPECT_TRUE(d.labels == NULL);
    LBK_EXPECT_EQ_U64(d.rows, 0);
    char *message = expand(c->message);
    const size_t n = strlen(message);
    const bool prefix = n > 0 && message[n - 1] == '*';
    char *want = malloc(n + 32), *start = malloc(n + 32);
    LBK_ASSERT_TRUE(want && start, "out of memory");
    snprintf(want, n + 32, "lbknn: error: %.*s%s", (int)(prefix ? n - 1 : n), message,
             prefix ? "" : "\n");
    if (prefix) {
        snprintf(start, n + 32, "%.*s", (int)strlen(want), err);
        LBK_EXPECT_EQ_STR(start, want, "the start of the error");
        const char *nl = strchr(err, '\n');
        LBK_EXPECT_TRUE(nl != NULL && nl[1] == '\0', "one line, ending in a newline");
    } else {
        LBK_EXPECT_EQ_STR(err, want);
    }
    free(start);
    free(want);
    free(message);
    free(err);
    lbk_dataset_free(&d);
}

const lbk_test_table tk_bad_cases = LBK_TEST_ROWS(bad, run_bad);
