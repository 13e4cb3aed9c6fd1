/* Data sets: labelled points in host memory, the formats and the writers
 * (the readers of a job's sources: dataset_read.h). Knows nothing of OpenCL
 * or MPI. */
#ifndef LBK_DATASET_H
#define LBK_DATASET_H

#include "enums.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t rows; /* rows held here */
    int dim;
    uint64_t first_row; /* global row index of row 0 (shards) */
    float *points;      /* rows * dim, row-major; NULL when the rows are compact (raw) */
    lbk_dtype dtype;    /* FLOAT32 (points), or UINT8, INT8, FLOAT16: the rows in raw */
    void *raw;          /* rows * dim values of dtype, row-major (uint8_t, int8_t, or
                         * IEEE binary16 bits as uint16_t); NULL for FLOAT32 */
    int32_t *labels;    /* rows, or NULL when the source has no labels */
    uint64_t *ids;      /* global row index of each row (ascending), or NULL when the
                          * rows are first_row, first_row + 1, ... (a spatial partition's
                          * points come from everywhere) */
    uint32_t *ids32;    /* the same in half the memory, used instead of ids when every
                          * global index fits 32 bits */
} lbk_dataset;

/* Row i's global row index. */
static inline uint64_t lbk_dataset_id(const lbk_dataset *data, uint64_t i)
{
    if (data->ids32)
        return data->ids32[i];
    return data->ids ? data->ids[i] : data->first_row + i;
}

/* Bytes of one value of a type (FLOAT32 4, FLOAT16 2, UINT8 and INT8 1;
 * 0 for AUTO). */
size_t lbk_dataset_type_bytes(lbk_dtype type);
/* Whether the type's values are integers (UINT8, INT8): exact integer
 * distances. */
static inline bool lbk_dataset_type_integer(lbk_dtype type)
{
    return type == LBK_DTYPE_UINT8 || type == LBK_DTYPE_INT8;
}
/* IEEE binary16 bits to float: exact for every value (subnormals too). */
float lbk_dataset_half_to_float(uint16_t bits);
/* Values first .. first + count - 1 of compact `values` of `type` (UINT8,
 * INT8, FLOAT16) into out as floats, exactly. */
void lbk_dataset_values_to_float(lbk_dtype type, const void *values, uint64_t first,
                                 uint64_t count, float *out);

/* Compact rows (raw) widened to float32 points, in place: exact for every
 * type, and the memory of four bytes a value (a float32 set: nothing to
 * do). The doors that search float32 only call it (docs/design.md
 * "Compact reference points"). */
lbk_status lbk_dataset_widen(lbk_dataset *data);

/* Resolve LBK_FORMAT_AUTO from the extension (".fvecs", ".csv", "-ubyte",
 * "-ubyte.gz", ".idx", ".txt", ".npy", ".fbin", ...: the format table of
 * dataset.c). Returns LBK_FORMAT_AUTO when unknown.
 * ".tsv" is CSV: the delimiter always comes from the spec. Only IDX may be
 * gzip-compressed (recognised by content, so the name needs no ".gz"). */
lbk_format lbk_dataset_format_from_path(const char *path);
/* The extension a file of the format is written with (".fvecs", ".txt"; ""
 * for AUTO). */
const char *lbk_dataset_format_extension(lbk_format format);
/* Whether `lbknn generate --format` writes the format; the names of those
 * that it writes, joined as lbk_enum_join does ("fvecs|bvecs|..."). */
bool lbk_dataset_format_generated(lbk_format format);
void lbk_dataset_format_generated_names(const char *sep, const char *last_sep, char *buf,
                                        unsigned size);

/* Writers, used by `lbknn generate`, the outputs and the tests. Each writes
 * the whole file; callers handle temp-file-and-rename. Points: bvecs and
 * u8bin need integers 0..255, i8bin -128..127, ivecs and ibin int32 integers
 * (else LBK_ERR_INPUT, nothing written); IDX is ubyte when every value is an
 * integer 0..255, else float; fvecs, fbin and npy (float32) write any value,
 * +inf included. Labels: ivecs, IDX, text, csv, npy (int32), ibin. I/O failures (also at close) are
 * LBK_ERR_IO naming the path. */
lbk_status lbk_dataset_write_points(const char *path, lbk_format format, const lbk_dataset *data);
/* CSV writes points and, with labels, the label as the last column. */
lbk_status lbk_dataset_write_labels(const char *path, lbk_format format, const int32_t *labels,
                                    uint64_t rows);
lbk_status lbk_dataset_write_fvecs(const char *path, const float *values, uint64_t rows, int dim);
lbk_status lbk_dataset_write_ivecs(const char *path, const int32_t *values, uint64_t rows,
                                   int dim);

/* Result arrays (K values per query) written slice by slice at computed
 * offsets, laid out by the file name: ".ibin"/".fbin" big-ann-benchmarks
 * (an 8-byte header: uint32 rows, uint32 K), ".npy" NumPy (int32 ids or
 * float32 distances, shape (rows, K), C order), anything else TEXMEX
 * (".ivecs"/".fvecs": every row starts with K as int32, no file header). */
typedef enum {
    LBK_ARRAY_VECS,
    LBK_ARRAY_BIN,
    LBK_ARRAY_NPY,
    LBK_ARRAY_HDF5 /* ".hdf5"/".h5": lbk_hdf5_array_create; no header here */
} lbk_dataset_array_layout;
#define LBK_DATASET_NPY_HEADER_MAX 256
lbk_dataset_array_layout lbk_dataset_array_layout_of(const char *path);
/* The file header of a rows x cols array (int32 or float32) into buf (at
 * least LBK_DATASET_NPY_HEADER_MAX bytes); returns its length (0 for VECS). BIN
 * needs rows <= UINT32_MAX. */
size_t lbk_dataset_array_header(lbk_dataset_array_layout layout, bool floats, uint64_t rows,
                                int cols, unsigned char *buf);
/* The same header for a .npy file (a vector: shape (rows,)). */
size_t lbk_npy_header(const char *descr, uint64_t rows, uint64_t cols, bool vector,
                      unsigned char *buf);
void lbk_bigann_header(uint64_t rows, uint64_t cols, unsigned char *buf);

/* Ground truth (ann-benchmarks' HDF5 `neighbors` and `distances`): the
 * dataset `name` of path, a 2-D array of integer ids or of float
 * distances, one row per query. Probe: its shape, after checking the
 * kind. Read: rows [lo, hi), their first `cols` columns (int32 and float32
 * files convert exactly). Errors name the file and the dataset. */
lbk_status lbk_hdf5_truth_probe(const char *path, const char *name, bool distances,
                                uint64_t *rows, uint64_t *cols);
lbk_status lbk_hdf5_truth_read_ids(const char *path, const char *name, uint64_t lo, uint64_t hi,
                                   uint64_t cols, int64_t *ids);
lbk_status lbk_hdf5_truth_read_distances(const char *path, const char *name, uint64_t lo,
                                         uint64_t hi, uint64_t cols, double *distances);

/* An HDF5 result file: creates path (truncated) holding one rows x cols
 * dataset `name` (float32, or int32 / int64 by value_bytes), contiguous and
 * allocated in the file now, unfilled; *offset: the byte where its row 0
 * starts. The rows are then written as raw little-endian values at
 * offset + row * cols * value_bytes by any process (docs/design.md). */
lbk_status lbk_hdf5_array_create(const char *path, const char *name, bool floats,
                                 size_t value_bytes, uint64_t rows, int cols, uint64_t *offset);

/* The HDF5 library this process runs with ("1.10.8", from the library
 * itself), or "not built in" (LBKNN_WITH_HDF5=OFF), for --version. */
void lbk_hdf5_version(char *buf, size_t size);

void lbk_dataset_free(lbk_dataset *data);

#endif
