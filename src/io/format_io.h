/* Private to the dataset module: the per-format readers and writers that
 * dataset.c dispatches to, and the byte, line and field helpers they share.
 *
 * Conventions: row numbers in messages are 1-based (binary formats: the
 * record number; text formats: the physical line), columns are 1-based.
 * Readers are called only after a successful probe of the same file, and
 * with lo < hi <= rows. */
#ifndef LBK_FORMAT_IO_H
#define LBK_FORMAT_IO_H

#include "dataset_read.h"
#include "try.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- values ------------------------------------------------------------- */

/* One decoded value of row `row`, column `col` (0-based) into its slot: a
 * label (non-negative, fits int32) or a coordinate (finite as a float).
 * Inline: the binary readers call it once per value. */
static inline lbk_status lbk_fmt_store_value(const char *path, uint64_t row, uint64_t col,
                                             double v, float *point, int32_t *label)
{
    if (label) {
        LBK_FAIL_IF(v < 0 || v > INT32_MAX, LBK_ERR_INPUT, "%s:%llu: %s label %.0f", path,
                    (unsigned long long)(row + 1), v < 0 ? "negative" : "too large", v);
        *label = (int32_t)v;
        return LBK_OK;
    }
    const float f = (float)v;
    LBK_FAIL_IF(!isfinite(f), LBK_ERR_INPUT, "%s:%llu:%llu: value is not a finite float (%g)",
                path, (unsigned long long)(row + 1), (unsigned long long)(col + 1), v);
    *point = f;
    return LBK_OK;
}

/* A point value decoded as v (exact: the file's values are of `type`, or
 * type is FLOAT32) into element `at` of a points array of `type` (uint8_t,
 * int8_t, or float; FLOAT16 stores its bits with lbk_fmt_store_half). */
static inline lbk_status lbk_fmt_store_point(const char *path, uint64_t row, uint64_t col,
                                             double v, lbk_dtype type, void *points, uint64_t at)
{
    if (type == LBK_DTYPE_UINT8) {
        ((uint8_t *)points)[at] = (uint8_t)v;
        return LBK_OK;
    }
    if (type == LBK_DTYPE_INT8) {
        ((int8_t *)points)[at] = (int8_t)v;
        return LBK_OK;
    }
    return lbk_fmt_store_value(path, row, col, v, (float *)points + at, NULL);
}

/* A binary16 value's bits into element `at` of a FLOAT16 points array:
 * infinities and NaNs refused as a float's are. */
static inline lbk_status lbk_fmt_store_half(const char *path, uint64_t row, uint64_t col,
                                            uint16_t bits, void *points, uint64_t at)
{
    LBK_FAIL_IF((bits & 0x7c00u) == 0x7c00u, LBK_ERR_INPUT,
                "%s:%llu:%llu: value is not a finite float16 (bits 0x%04x)", path,
                (unsigned long long)(row + 1), (unsigned long long)(col + 1), (unsigned)bits);
    ((uint16_t *)points)[at] = bits;
    return LBK_OK;
}

/* ---- files ------------------------------------------------------------ */

/* Missing, unreadable or a directory: "PATH: cannot open: why", LBK_ERR_INPUT. */
lbk_status lbk_fmt_open_read(const char *path, FILE **out);
lbk_status lbk_fmt_open_write(const char *path, FILE **out);
/* Flushes and closes, reporting a failed write or close with the path. */
lbk_status lbk_fmt_close_write(FILE *file, const char *path);
lbk_status lbk_fmt_file_size(FILE *file, const char *path, uint64_t *size);
lbk_status lbk_fmt_seek(FILE *file, const char *path, uint64_t offset);
/* Reads up to n bytes; *got < n only at end of file. */
lbk_status lbk_fmt_read(FILE *file, const char *path, void *buf, size_t n, size_t *got);
lbk_status lbk_fmt_write(FILE *file, const char *path, const void *buf, size_t n);
/* count * size bytes, refusing sizes that overflow. */
lbk_status lbk_fmt_alloc(void **out, uint64_t count, size_t size);

/* A reader's header says `got` values per row where the caller's array was
 * sized for `want` (the file changed since it was probed): an input error,
 * before anything is written past the array. */
lbk_status lbk_fmt_check_dim(const char *path, uint64_t got, int want);

/* Records are read and written LBK_FMT_CHUNK_BYTES at a time: large enough
 * to amortise the calls, small enough not to double the footprint of a
 * shard. lbk_fmt_chunk_rows: the `rec`-byte records of one chunk, at least
 * 1 and at most `rows` (when rows > 0). */
#define LBK_FMT_CHUNK_BYTES ((uint64_t)8 << 20)
uint64_t lbk_fmt_chunk_rows(uint64_t rec, uint64_t rows);

/* Receives records [row, row + n) of a read, in buf. */
typedef lbk_status (*lbk_fmt_decode_fn)(const void *ctx, const unsigned char *buf, uint64_t row,
                                        uint64_t n);

/* Rows [lo, hi) of `rec`-byte records, record 0 at byte `data_offset`, read
 * a chunk at a time and handed to `decode`. A file that ends early (it
 * shrank since the probe) is "PATH:ROW: truncated record (unexpected end
 * of file)". */
lbk_status lbk_fmt_read_records(FILE *file, const char *path, uint64_t data_offset, uint64_t rec,
                                uint64_t lo, uint64_t hi, lbk_fmt_decode_fn decode,
                                const void *ctx);

/* Fills buf with records [row, row + n) of a write. */
typedef void (*lbk_fmt_encode_fn)(const void *ctx, uint64_t row, uint64_t n, unsigned char *buf);

/* Creates path and writes `head_bytes` of head (none: 0), then `rows`
 * records of `rec` bytes, a chunk at a time as `encode` fills them; a
 * failed create, write or close is reported with the path. */
lbk_status lbk_fmt_write_records(const char *path, const void *head, size_t head_bytes,
                                 uint64_t rec, uint64_t rows, lbk_fmt_encode_fn encode,
                                 const void *ctx);

static inline uint32_t lbk_fmt_get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint32_t lbk_fmt_get_be32(const unsigned char *p)
{
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}
static inline void lbk_fmt_put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}
static inline void lbk_fmt_put_be32(unsigned char *p, uint32_t v)
{
    p[3] = (unsigned char)v;
    p[2] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)(v >> 16);
    p[0] = (unsigned char)(v >> 24);
}

/* "a, b, c" (or "a, b or c" with last_sep " or "): the names of a format
 * table after its leading AUTO, for messages that list the formats to give. */
void lbk_fmt_join_names(const lbk_enum_item *formats, const char *last_sep, char *buf,
                        unsigned size);

/* ---- text lines and fields -------------------------------------------- */

typedef struct {
    FILE *file;
    const char *path;
    char *buf;
    size_t cap;
    uint64_t line; /* physical number of the line last returned, 1-based */
} lbk_fmt_line_reader;

lbk_status lbk_fmt_lines_open(lbk_fmt_line_reader *reader, const char *path);
void lbk_fmt_lines_close(lbk_fmt_line_reader *reader);
/* The next non-blank line, without its line ending ("\n" or "\r\n"), or
 * *line = NULL at the end. Blank lines are allowed only at the end of the
 * file; one followed by data is an error at the blank line. */
lbk_status lbk_fmt_lines_next(lbk_fmt_line_reader *reader, char **line);

/* Strips leading and trailing blanks in place. */
char *lbk_fmt_trim(char *s);
/* Whole-field parses of trimmed text. */
bool lbk_fmt_parse_number(const char *field);
/* Logs "PATH:ROW[:COL]: what" (col <= 0: no column) on failure. */
lbk_status lbk_fmt_parse_float(const char *path, uint64_t row, int col, const char *field,
                               float *out);
lbk_status lbk_fmt_parse_label(const char *path, uint64_t row, int col, const char *field,
                               int32_t *out);
/* A regression target: any finite double. */
lbk_status lbk_fmt_parse_target(const char *path, uint64_t row, int col, const char *field,
                                double *out);

/* The type of a points file's values (lbk_dataset_info's file_type), from
 * its format and, for IDX and npy, its header, for HDF5 its dataset
 * `dataset`'s type (dataset_type.c). */
lbk_status lbk_dataset_file_type(const char *path, const char *dataset, lbk_format format,
                                 lbk_dtype *out);

/* ---- formats ------------------------------------------------------------ */

/* fvecs / ivecs / bvecs: little-endian records "int32 dim, dim values". */
lbk_status lbk_texmex_probe(const char *path, lbk_format format, uint64_t *rows, int *dim);
/* Exactly one of points / ints is non-NULL; ints only for ivecs. points
 * are of `type`: FLOAT32, or UINT8 for bvecs (the readers below alike: a
 * compact type only where the file's values are of it, lbk_dataset_info's
 * file_type). */
lbk_status lbk_texmex_read(const char *path, lbk_format format, int dim, uint64_t lo, uint64_t hi,
                           lbk_dtype type, void *points, int32_t *ints);
/* Exactly one of points / ints is non-NULL. Float values must fit the
 * format (bvecs: integers 0..255, ivecs: int32 integers). */
lbk_status lbk_texmex_write(const char *path, lbk_format format, const float *points,
                            const int32_t *ints, uint64_t rows, int dim);

lbk_status lbk_csv_probe(const lbk_job_input_spec *spec, uint64_t *rows, int *dim);
/* labels non-NULL only when spec->label_column >= 0. */
lbk_status lbk_csv_read(const lbk_job_input_spec *spec, int dim, uint64_t lo, uint64_t hi,
                        float *points, int32_t *labels);
lbk_status lbk_csv_write(const char *path, const lbk_dataset *data);
/* Rows [lo, hi) of the column spec->target_column (>= 0) as float64. */
lbk_status lbk_csv_read_targets(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi,
                                double *targets);

/* IDX, plain or gzip (told apart by the gzip magic, not the name). */
lbk_status lbk_idx_probe(const char *path, bool labels, uint64_t *rows, int *dim);
/* Exactly one of points / labels is non-NULL; dim: the values per row the
 * caller's array holds (the probe's; 1 for labels), checked against the
 * header read now (lbk_fmt_check_dim). The npy and bigann readers alike. */
lbk_status lbk_idx_read(const char *path, int dim, uint64_t lo, uint64_t hi, lbk_dtype type,
                        void *points, int32_t *labels);
/* The type of an IDX points file's values: UINT8 (ubyte), INT8 (sbyte), or
 * FLOAT32 for every other (read widened). */
lbk_status lbk_idx_dtype(const char *path, lbk_dtype *type);
lbk_status lbk_idx_write_points(const char *path, const float *points, uint64_t rows, int dim);
lbk_status lbk_idx_write_labels(const char *path, const int32_t *labels, uint64_t rows);

/* NumPy .npy: points are 2-D float16/float32/float64/uint8/int8 (and
 * other integers), labels 1-D (or
 * N x 1) integers; exactly one of points / labels is non-NULL. */
lbk_status lbk_npy_probe(const char *path, bool labels, uint64_t *rows, int *dim);
lbk_status lbk_npy_read(const char *path, int dim, uint64_t lo, uint64_t hi, lbk_dtype type,
                        void *points, int32_t *labels);
/* The type of a points file's values: UINT8 (|u1), INT8 (|i1), FLOAT16
 * (<f2 or >f2), FLOAT32 for the others (read widened). */
lbk_status lbk_npy_dtype(const char *path, lbk_dtype *type);
/* Regression targets: 1-D (or N x 1) float32 or float64, read as float64,
 * every value finite. */
lbk_status lbk_npy_targets_probe(const char *path, uint64_t *rows);
lbk_status lbk_npy_targets_read(const char *path, uint64_t lo, uint64_t hi, double *targets);
/* Exactly one of points (float32, rows x dim) / labels (int32, rows). */
lbk_status lbk_npy_write(const char *path, const float *points, const int32_t *labels,
                         uint64_t rows, int dim);

/* big-ann-benchmarks: FBIN, U8BIN, I8BIN points, IBIN ids or labels (dim 1);
 * exactly one of points / labels (IBIN only) is non-NULL. */
lbk_status lbk_bigann_probe(const char *path, lbk_format format, uint64_t *rows, int *dim);
lbk_status lbk_bigann_read(const char *path, lbk_format format, int dim, uint64_t lo, uint64_t hi,
                           lbk_dtype type, void *points, int32_t *labels);
/* Exactly one of points / ints (IBIN only) is non-NULL; float values must fit
 * the format (U8BIN 0..255, I8BIN -128..127, IBIN int32: integers). */
lbk_status lbk_bigann_write(const char *path, lbk_format format, const float *points,
                            const int32_t *ints, uint64_t rows, int dim);

/* HDF5: the dataset `name` of the file (empty: an error listing the
 * file's datasets). Points: 2-D floats or integers; labels: integers,
 * shape (N,) or (N, 1). Rows [lo, hi) are read as one hyperslab per chunk
 * (per rank: its rows only). Exactly one of points / labels is non-NULL.
 * Points of `type` (lbk_hdf5_dtype's, or FLOAT32): uint8 and int8 as
 * stored, float16 as its bits (each finite), float32 from any float or
 * integer (float64 rounded; every integer checked exact in float32). */
lbk_status lbk_hdf5_probe(const char *path, const char *name, bool labels, uint64_t *rows,
                          int *dim);
/* The points' own type: UINT8 and INT8 for 1-byte integers, FLOAT16 for
 * IEEE binary16, FLOAT32 for every other (widened). 8-byte integers are
 * refused: not every value is exact in float32 nor checked so on the way. */
lbk_status lbk_hdf5_dtype(const char *path, const char *name, lbk_dtype *type);
lbk_status lbk_hdf5_read(const char *path, const char *name, int dim, uint64_t lo, uint64_t hi,
                         lbk_dtype type, void *points, int32_t *labels);

/* Label files: ivecs (dim 1), IDX, TEXT (one integer per line), CSV (one
 * integer per line, optional header line), NPY, IBIN (dim 1). */
lbk_status lbk_labels_probe(const char *path, lbk_format format, uint64_t *rows);
lbk_status lbk_labels_read(const char *path, lbk_format format, uint64_t lo, uint64_t hi,
                           int32_t *labels);
lbk_status lbk_labels_write(const char *path, lbk_format format, const int32_t *labels,
                            uint64_t rows);

/* Target files (task regress): NPY, TEXT (one number per line), FVECS of
 * dimension 1; the format from the name. */
lbk_status lbk_targets_probe(const char *path, uint64_t *rows);
lbk_status lbk_targets_read(const char *path, uint64_t lo, uint64_t hi, double *targets);

#endif
