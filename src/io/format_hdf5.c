/* HDF5 files as ann-benchmarks ships them: one file, several datasets
 * (train, test, neighbors, distances), the one to read named by the job.
 * Read with Debian's serial libhdf5: every rank opens the file read-only
 * and selects its own rows (a hyperslab), so no parallel HDF5 is needed.
 * uint8 and int8 points (1-byte integers) and IEEE binary16 ones are read
 * at their own width, libhdf5 converting nothing but the byte order;
 * widened, values pass through lbk_fmt_store_value, read as double:
 * float64 points are rounded to float32 there, every point is checked
 * finite as a float, and an integer that float32 does not hold exactly is
 * refused (docs/design.md, "Compact reference points"). Result arrays are created here and filled by the outputs with
 * plain writes at the dataset's file offset (docs/design.md, "HDF5"). */
#include "format_io.h"

#include "alloc_large.h"
#include "log.h"
#include "try.h"

#include <hdf5.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

void lbk_hdf5_version(char *buf, size_t size)
{
    unsigned major = 0, minor = 0, release = 0;
    if (H5get_libversion(&major, &minor, &release) < 0)
        snprintf(buf, size, "unknown");
    else
        snprintf(buf, size, "%u.%u.%u", major, minor, release);
}

/* An open dataset and what it holds. */
typedef struct {
    hid_t file, dset, space, type;
    H5T_class_t cls;
    size_t size;
    int ndims;
    hsize_t shape[2];
} h5_array;

/* libhdf5 prints its error stack to stderr by default; every error here is
 * said once, as one line, by this file. */
static void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* Read-only, without file locks: nothing here writes, and locks fail on
 * file systems without them (some NFS mounts) for no gain. */
static hid_t h5_open_read(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        return -1;
#if H5_VERSION_GE(1, 10, 7)
    H5Pset_file_locking(fapl, 0, 1);
#endif
    const hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    return file;
}

static void h5_close(h5_array *a)
{
    if (a->type >= 0)
        H5Tclose(a->type);
    if (a->space >= 0)
        H5Sclose(a->space);
    if (a->dset >= 0)
        H5Dclose(a->dset);
    if (a->file >= 0)
        H5Fclose(a->file);
    a->file = a->dset = a->space = a->type = -1;
}

static const char *class_name(H5T_class_t cls)
{
    switch (cls) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    default: return "non-numeric";
    }
}

/* "train, test, ..." : the file's top-level names, for messages. */
static void list_names(hid_t file, char *buf, size_t size)
{
    H5G_info_t info;
    size_t used = 0;
    buf[0] = '\0';
    if (H5Gget_info(file, &info) < 0 || info.nlinks == 0) {
        snprintf(buf, size, "nothing at the top level");
        return;
    }
    for (hsize_t i = 0; i < info.nlinks && used + 1 < size; i++) {
        char name[LBK_NAME_MAX];
        if (H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                               H5P_DEFAULT) < 0)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
    }
}

/* A name the file does not hold as a dataset: say which it has. */
static lbk_status no_dataset(const char *path, hid_t file, const char *name)
{
    char names[512];
    list_names(file, names, sizeof names);
    if (name[0])
        lbk_error("%s: no dataset '%s' in this HDF5 file (it has: %s)", path, name, names);
    else
        lbk_error("%s: an HDF5 file holds several arrays; name the one to read with `dataset:` "
                  "(it has: %s)",
                  path, names);
    return LBK_ERR_INPUT;
}

static bool is_dataset(hid_t file, const char *name)
{
    /* H5Lexists fails (negative) when a group on the way is missing. */
    if (!name[0] || H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return false;
    H5O_info_t info;
#if H5_VERSION_GE(1, 12, 0)
    if (H5Oget_info_by_name3(file, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
#else
    if (H5Oget_info_by_name(file, name, &info, H5P_DEFAULT) < 0)
#endif
        return false;
    return info.type == H5O_TYPE_DATASET;
}

/* Opens `name` of path and reads its type and shape (at most 2-D). */
static lbk_status h5_open(const char *path, const char *name, h5_array *a)
{
    memset(a, 0, sizeof *a);
    a->file = a->dset = a->space = a->type = -1;
    h5_quiet();
    LBK_FAIL_IF(H5Fis_hdf5(path) <= 0, LBK_ERR_INPUT, "%s: not an HDF5 file", path);
    a->file = h5_open_read(path);
    LBK_FAIL_IF(a->file < 0, LBK_ERR_INPUT, "%s: cannot open the HDF5 file", path);
    if (!is_dataset(a->file, name))
        return no_dataset(path, a->file, name);
    a->dset = H5Dopen2(a->file, name, H5P_DEFAULT);
    a->type = a->dset >= 0 ? H5Dget_type(a->dset) : -1;
    a->space = a->dset >= 0 ? H5Dget_space(a->dset) : -1;
    LBK_FAIL_IF(a->type < 0 || a->space < 0, LBK_ERR_INPUT,
                "%s: cannot open dataset '%s' of the HDF5 file", path, name);
    a->cls = H5Tget_class(a->type);
    a->size = H5Tget_size(a->type);
    a->ndims = H5Sget_simple_extent_ndims(a->space);
    LBK_FAIL_IF(a->ndims < 1 || a->ndims > 2, LBK_ERR_INPUT,
                "%s: dataset '%s' is %d-D; points and results are 2-D, labels 1-D", path, name,
                a->ndims);
    H5Sget_simple_extent_dims(a->space, a->shape, NULL);
    if (a->ndims == 1)
        a->shape[1] = 1;
    return LBK_OK;
}

/* What the caller expects: points (2-D floats) or labels (1-D or N x 1
 * integers). */
static lbk_status check_kind(const char *path, const char *name, const h5_array *a, bool labels)
{
    if (labels) {
        LBK_FAIL_IF(a->cls != H5T_INTEGER, LBK_ERR_INPUT,
                    "%s: dataset '%s' holds %s values; labels must be integers", path, name,
                    class_name(a->cls));
        LBK_FAIL_IF(a->shape[1] != 1, LBK_ERR_INPUT,
                    "%s: dataset '%s' has shape (%llu, %llu); labels must be (N,) or (N, 1)",
                    path, name, (unsigned long long)a->shape[0], (unsigned long long)a->shape[1]);
        return LBK_OK;
    }
    LBK_FAIL_IF(a->ndims != 2, LBK_ERR_INPUT,
                "%s: dataset '%s' is 1-D; points must be 2-D (rows, dimension)", path, name);
    LBK_FAIL_IF(a->cls != H5T_FLOAT && (a->cls != H5T_INTEGER || a->size > 4), LBK_ERR_INPUT,
                "%s: dataset '%s' holds %s values (%zu bytes); points must be floats or "
                "integers of at most 4 bytes",
                path, name, class_name(a->cls), a->size);
    LBK_FAIL_IF(a->shape[1] == 0, LBK_ERR_INPUT, "%s: dataset '%s' has dimension 0", path, name);
    LBK_FAIL_IF(a->shape[1] > INT_MAX, LBK_ERR_INPUT,
                "%s: dataset '%s': dimension %llu is too large", path, name,
                (unsigned long long)a->shape[1]);
    return LBK_OK;
}

lbk_status lbk_hdf5_probe(const char *path, const char *name, bool labels, uint64_t *rows,
                          int *dim)
{
    h5_array a;
    lbk_status st = h5_open(path, name, &a);
    if (st == LBK_OK)
        st = check_kind(path, name, &a, labels);
    if (st == LBK_OK) {
        *rows = a.shape[0];
        *dim = (int)a.shape[1];
    }
    h5_close(&a);
    return st;
}

/* Whether a 2-byte float type is IEEE binary16 (h5py's float16): sign,
 * 5 exponent bits biased by 15, 10 mantissa bits. */
static bool is_half(hid_t type)
{
    size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    return H5Tget_size(type) == 2 &&
           H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) >= 0 && spos == 15 &&
           epos == 10 && esize == 5 && mpos == 0 && msize == 10 && H5Tget_ebias(type) == 15;
}

static lbk_dtype array_dtype(const h5_array *a)
{
    if (a->cls == H5T_INTEGER && a->size == 1)
        return H5Tget_sign(a->type) == H5T_SGN_NONE ? LBK_DTYPE_UINT8 : LBK_DTYPE_INT8;
    if (a->cls == H5T_FLOAT && is_half(a->type))
        return LBK_DTYPE_FLOAT16;
    return LBK_DTYPE_FLOAT32;
}

lbk_status lbk_hdf5_dtype(const char *path, const char *name, lbk_dtype *type)
{
    h5_array a;
    lbk_status st = h5_open(path, name, &a);
    if (st == LBK_OK)
        st = check_kind(path, name, &a, false);
    if (st == LBK_OK)
        *type = array_dtype(&a);
    h5_close(&a);
    return st;
}

/* Rows [lo, lo + n) of columns [0, cols) of `a` into buf as `mem_type`. */
static lbk_status read_block(const char *path, const char *name, const h5_array *a,
                             hid_t mem_type, uint64_t lo, uint64_t n, uint64_t cols, void *buf)
{
    hsize_t start[2] = {lo, 0}, count[2] = {n, cols};
    const hid_t mem = H5Screate_simple(a->ndims, count, NULL);
    herr_t rc =
        mem < 0 ? -1 : H5Sselect_hyperslab(a->space, H5S_SELECT_SET, start, NULL, count, NULL);
    if (rc >= 0)
        rc = H5Dread(a->dset, mem_type, mem, a->space, H5P_DEFAULT, buf);
    if (mem >= 0)
        H5Sclose(mem);
    LBK_FAIL_IF(rc < 0, LBK_ERR_INPUT, "%s: cannot read rows %llu..%llu of dataset '%s'", path,
                (unsigned long long)lo + 1, (unsigned long long)(lo + n), name);
    return LBK_OK;
}

/* Rows [lo, hi), a chunk at a time as double, each value checked into its
 * slot (points: finite as a float; labels: non-negative int32). */
static lbk_status read_checked(const char *path, const char *name, const h5_array *a, uint64_t lo,
                               uint64_t hi, float *points, int32_t *labels)
{
    lbk_status st = LBK_OK;
    double *buf = NULL;
    const uint64_t dim = a->shape[1];
    const uint64_t chunk = lbk_fmt_chunk_rows(dim * sizeof *buf, hi - lo);
    LBK_TRY(lbk_fmt_alloc((void **)&buf, chunk * dim, sizeof *buf));
    for (uint64_t r = lo; r < hi && st == LBK_OK; r += chunk) {
        const uint64_t n = hi - r < chunk ? hi - r : chunk;
        st = read_block(path, name, a, H5T_NATIVE_DOUBLE, r, n, dim, buf);
        for (uint64_t i = 0; i < n * dim && st == LBK_OK; i++) {
            const uint64_t row = r + i / dim, at = row - lo;
            st = lbk_fmt_store_value(path, row, i % dim, buf[i],
                                     points ? points + at * dim + i % dim : NULL,
                                     labels ? labels + at : NULL);
            /* int32 values above 2^24 that float32 would round. */
            if (st == LBK_OK && points && a->cls == H5T_INTEGER &&
                (double)points[at * dim + i % dim] != buf[i]) {
                lbk_error("%s:%llu:%llu: the integer %.0f of dataset '%s' is not exact in "
                          "float32",
                          path, (unsigned long long)(row + 1), (unsigned long long)(i % dim + 1),
                          buf[i], name);
                st = LBK_ERR_INPUT;
            }
        }
    }
    lbk_alloc_large_free(buf);
    return st;
}

/* Rows [lo, hi) at their own width, straight into `points` (the file's
 * type is `type`, lbk_dataset_resolve_type checked): 1-byte integers as
 * they are; binary16 as bits in this host's order, each checked finite. */
static lbk_status read_compact(const char *path, const char *name, const h5_array *a,
                               lbk_dtype type, uint64_t lo, uint64_t hi, void *points)
{
    const uint64_t dim = a->shape[1];
    LBK_FAIL_IF(array_dtype(a) != type, LBK_ERR_INPUT,
                "%s: dataset '%s' holds no %s values now (changed while reading?)", path, name,
                lbk_dtype_name(type));
    if (type != LBK_DTYPE_FLOAT16)
        return read_block(path, name, a,
                          type == LBK_DTYPE_UINT8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_INT8, lo,
                          hi - lo, dim, points);
    const hid_t mem = H5Tcopy(a->type);
    lbk_status st = mem >= 0 && H5Tset_order(mem, H5T_ORDER_LE) >= 0 ? LBK_OK : LBK_ERR_INPUT;
    if (st != LBK_OK)
        lbk_error("%s: cannot read dataset '%s' as float16", path, name);
    if (st == LBK_OK)
        st = read_block(path, name, a, mem, lo, hi - lo, dim, points);
    if (mem >= 0)
        H5Tclose(mem);
    const uint16_t *bits = points;
    for (uint64_t i = 0; st == LBK_OK && i < (hi - lo) * dim; i++)
        st = lbk_fmt_store_half(path, lo + i / dim, i % dim, bits[i], points, i);
    return st;
}

lbk_status lbk_hdf5_read(const char *path, const char *name, int dim, uint64_t lo, uint64_t hi,
                         lbk_dtype type, void *points, int32_t *labels)
{
    h5_array a;
    lbk_status st = h5_open(path, name, &a);
    if (st == LBK_OK)
        st = check_kind(path, name, &a, labels != NULL);
    if (st == LBK_OK)
        st = lbk_fmt_check_dim(path, a.shape[1], dim);
    if (st == LBK_OK && hi > a.shape[0]) {
        lbk_error("%s: dataset '%s' has %llu rows now, %llu when probed (changed while reading?)",
                  path, name, (unsigned long long)a.shape[0], (unsigned long long)hi);
        st = LBK_ERR_INPUT;
    }
    if (st == LBK_OK && points && type != LBK_DTYPE_FLOAT32)
        st = read_compact(path, name, &a, type, lo, hi, points);
    else if (st == LBK_OK)
        st = read_checked(path, name, &a, lo, hi, points, labels);
    h5_close(&a);
    return st;
}

/* ---- ground truth ------------------------------------------------------- */

lbk_status lbk_hdf5_truth_probe(const char *path, const char *name, bool distances,
                                uint64_t *rows, uint64_t *cols)
{
    h5_array a;
    lbk_status st = h5_open(path, name, &a);
    const H5T_class_t want = distances ? H5T_FLOAT : H5T_INTEGER;
    if (st == LBK_OK && (a.ndims != 2 || a.cls != want)) {
        lbk_error("%s: dataset '%s' must be a 2-D %s array (one row of K %s per query), not a "
                  "%d-D %s one",
                  path, name, distances ? "float" : "integer", distances ? "distances" : "ids",
                  a.ndims, class_name(a.cls));
        st = LBK_ERR_INPUT;
    }
    if (st == LBK_OK) {
        *rows = a.shape[0];
        *cols = a.shape[1];
    }
    h5_close(&a);
    return st;
}

/* Rows [lo, hi), their first `cols` columns, as int64 ids or double
 * distances (HDF5 converts int32 and float32 exactly). */
static lbk_status truth_read(const char *path, const char *name, bool distances, uint64_t lo,
                             uint64_t hi, uint64_t cols, void *out)
{
    h5_array a;
    lbk_status st = h5_open(path, name, &a);
    if (st == LBK_OK && (a.ndims != 2 || a.shape[0] < hi || a.shape[1] < cols)) {
        lbk_error("%s: dataset '%s' changed since it was probed", path, name);
        st = LBK_ERR_INPUT;
    }
    if (st == LBK_OK && hi > lo)
        st = read_block(path, name, &a, distances ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, lo,
                        hi - lo, cols, out);
    h5_close(&a);
    return st;
}

lbk_status lbk_hdf5_truth_read_ids(const char *path, const char *name, uint64_t lo, uint64_t hi,
                                   uint64_t cols, int64_t *ids)
{
    return truth_read(path, name, false, lo, hi, cols, ids);
}

lbk_status lbk_hdf5_truth_read_distances(const char *path, const char *name, uint64_t lo,
                                         uint64_t hi, uint64_t cols, double *distances)
{
    return truth_read(path, name, true, lo, hi, cols, distances);
}

/* ---- result arrays ------------------------------------------------------ */

/* A rows x cols dataset `name`, contiguous and allocated at creation,
 * never filled: the outputs write every byte of it themselves. No
 * timestamps: the same results make the same file, byte for byte. */
static lbk_status create_dataset(const char *path, hid_t file, const char *name, hid_t type,
                                 uint64_t rows, int cols, uint64_t *offset)
{
    const hsize_t dims[2] = {rows, (hsize_t)cols};
    const hid_t space = H5Screate_simple(2, dims, NULL);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t dset = -1;
    if (space >= 0 && dcpl >= 0 && H5Pset_layout(dcpl, H5D_CONTIGUOUS) >= 0 &&
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0)
        dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    const haddr_t at = dset >= 0 ? H5Dget_offset(dset) : HADDR_UNDEF;
    if (dset >= 0)
        H5Dclose(dset);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    LBK_FAIL_IF(at == HADDR_UNDEF, LBK_ERR_IO,
                "%s: cannot create the HDF5 dataset '%s' (%" PRIu64 " x %d)", path, name, rows,
                cols);
    *offset = (uint64_t)at;
    return LBK_OK;
}

lbk_status lbk_hdf5_array_create(const char *path, const char *name, bool floats,
                                 size_t value_bytes, uint64_t rows, int cols, uint64_t *offset)
{
    h5_quiet();
    const hid_t type = floats ? H5T_IEEE_F32LE : value_bytes == 8 ? H5T_STD_I64LE : H5T_STD_I32LE;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
    if (fapl >= 0)
        H5Pset_file_locking(fapl, 0, 1);
#endif
    const hid_t file = fapl >= 0 ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
    if (fapl >= 0)
        H5Pclose(fapl);
    LBK_FAIL_IF(file < 0, LBK_ERR_IO, "%s: cannot create the HDF5 file", path);
    lbk_status st = create_dataset(path, file, name, type, rows, cols, offset);
    /* Closing writes the metadata and sets the file's length to its end of
     * allocation, the dataset's bytes included. */
    if (H5Fclose(file) < 0 && st == LBK_OK) {
        lbk_error("%s: cannot write the HDF5 file's metadata", path);
        st = LBK_ERR_IO;
    }
    return st;
}
