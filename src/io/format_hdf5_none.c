/* The HDF5 functions of a build without libhdf5 (LBKNN_WITH_HDF5=OFF), in
 * place of format_hdf5.c: the job's checks still accept format hdf5 (a
 * job file means the same in every build), and each reader refuses the
 * file here, naming it and the switch, before anything is computed. */
#include "format_io.h"

#include "log.h"

#include <stdio.h>

static lbk_status no_hdf5(const char *path)
{
    lbk_error("%s: this lbknn was built without HDF5 (LBKNN_WITH_HDF5=OFF); convert the "
              "file to .npy or .fvecs, or build with libhdf5",
              path);
    return LBK_ERR_CONFIG;
}

void lbk_hdf5_version(char *buf, size_t size) { snprintf(buf, size, "not built in"); }

lbk_status lbk_hdf5_probe(const char *path, const char *name, bool labels, uint64_t *rows,
                          int *dim)
{
    (void)name, (void)labels, (void)rows, (void)dim;
    return no_hdf5(path);
}

lbk_status lbk_hdf5_dtype(const char *path, const char *name, lbk_dtype *type)
{
    (void)name, (void)type;
    return no_hdf5(path);
}

lbk_status lbk_hdf5_read(const char *path, const char *name, int dim, uint64_t lo, uint64_t hi,
                         lbk_dtype type, void *points, int32_t *labels)
{
    (void)name, (void)dim, (void)lo, (void)hi, (void)type, (void)points, (void)labels;
    return no_hdf5(path);
}

lbk_status lbk_hdf5_truth_probe(const char *path, const char *name, bool distances,
                                uint64_t *rows, uint64_t *cols)
{
    (void)name, (void)distances, (void)rows, (void)cols;
    return no_hdf5(path);
}

lbk_status lbk_hdf5_truth_read_ids(const char *path, const char *name, uint64_t lo, uint64_t hi,
                                   uint64_t cols, int64_t *ids)
{
    (void)name, (void)lo, (void)hi, (void)cols, (void)ids;
    return no_hdf5(path);
}

lbk_status lbk_hdf5_truth_read_distances(const char *path, const char *name, uint64_t lo,
                                         uint64_t hi, uint64_t cols, double *distances)
{
    (void)name, (void)lo, (void)hi, (void)cols, (void)distances;
    return no_hdf5(path);
}

lbk_status lbk_hdf5_array_create(const char *path, const char *name, bool floats,
                                 size_t value_bytes, uint64_t rows, int cols, uint64_t *offset)
{
    (void)name, (void)floats, (void)value_bytes, (void)rows, (void)cols, (void)offset;
    return no_hdf5(path);
}
