/* Where every byte of a graph .npz goes (graph_npz.h): the members one
 * after the other, each a local header (30 bytes, the name, a 20-byte ZIP64
 * extra field) and then its .npy file, header and values; after them the
 * central directory and the end records (graph_npz_write.c writes them). */
#include "graph_npz.h"

#include "try.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LOCAL_HEADER_FIXED 30
#define ZIP64_LOCAL_EXTRA 20
#define CENTRAL_HEADER_FIXED 46
#define ZIP64_CENTRAL_EXTRA 28
/* The ZIP64 end of central directory record, its locator, the end record. */
#define END_RECORDS (56 + 20 + 22)
#define NPY_MAGIC_SIZE 6
/* NumPy's GROWTH_AXIS_MAX_DIGITS and ARRAY_ALIGN. */
#define NPY_GROWTH_DIGITS 21
#define NPY_ALIGN 64
/* Far below what 64-bit offsets (and off_t) hold, so no sum overflows. */
#define MAX_VALUES ((uint64_t)1 << 56)

unsigned lbk_graph_npz_index_size(uint64_t points, uint64_t neighbors)
{
    const bool wide =
        points > INT32_MAX || (neighbors > 0 && points > (uint64_t)INT32_MAX / neighbors);
    return wide ? 8 : 4;
}

/* Byte for byte what numpy.lib.format.write_array writes as a version 1.0
 * header (NumPy 1.24): the dict with its keys sorted, spaces for the first
 * axis to grow to 21 digits, then spaces to a multiple of 64 bytes (a whole
 * 64 more where it is one already) and a newline. ndims is 0 or 1. */
static lbk_status npy_header(lbk_graph_npz_member *m, const char *descr, int ndims,
                             uint64_t length, const char *path)
{
    char dict[LBK_GRAPH_NPZ_NPY_HEADER_MAX];
    char shape[32] = "()";
    if (ndims == 1)
        snprintf(shape, sizeof shape, "(%" PRIu64 ",)", length);
    const size_t n =
        (size_t)snprintf(dict, sizeof dict,
                         "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    const size_t digits = strlen(shape) - 3; /* "(N,)" */
    const size_t growth =
        ndims == 1 && digits < NPY_GROWTH_DIGITS ? NPY_GROWTH_DIGITS - digits : 0;
    const size_t prefix = NPY_MAGIC_SIZE + 2 + 2, used = prefix + n + growth + 1;
    const size_t total = used + NPY_ALIGN - used % NPY_ALIGN;
    LBK_FAIL_IF(total > sizeof m->npy_header, LBK_ERR_INTERNAL,
                "%s: internal: a .npy header of %zu bytes", path, total);
    unsigned char *h = m->npy_header;
    memcpy(h, "\x93NUMPY\x01\x00", NPY_MAGIC_SIZE + 2);
    h[8] = (unsigned char)((total - prefix) & 0xff);
    h[9] = (unsigned char)((total - prefix) >> 8);
    memcpy(h + prefix, dict, n);
    memset(h + prefix + n, ' ', total - prefix - n - 1);
    h[total - 1] = '\n';
    m->npy_header_size = total;
    return LBK_OK;
}

/* One member from `offset` on: its header's and values' places. */
static lbk_status place(lbk_graph_npz_member *m, const char *name, const char *descr, int ndims,
                        uint64_t length, uint64_t value_size, uint64_t *offset, const char *path)
{
    m->name = name;
    LBK_TRY(npy_header(m, descr, ndims, length, path));
    m->entry_offset = *offset;
    m->content_offset = *offset + LOCAL_HEADER_FIXED + strlen(name) + ZIP64_LOCAL_EXTRA;
    m->array_offset = m->content_offset + m->npy_header_size;
    m->array_size = (ndims == 1 ? length : 1) * value_size;
    *offset = m->array_offset + m->array_size;
    return LBK_OK;
}

/* The five members and the central directory, from the shape already in `layout`: the kNN and
 * the CSR layouts differ only in how they check and fill that shape. */
static lbk_status place_members(lbk_graph_npz_layout *layout, const char *path)
{
    const uint64_t values = layout->values;
    const unsigned index_size = layout->index_size;
    const char *index_descr = index_size == 8 ? "<i8" : "<i4";
    lbk_graph_npz_member *m = layout->member;
    uint64_t offset = 0;
    LBK_TRY(place(&m[LBK_GRAPH_NPZ_INDICES], "indices.npy", index_descr, 1, values, index_size,
                  &offset, path));
    LBK_TRY(place(&m[LBK_GRAPH_NPZ_INDPTR], "indptr.npy", index_descr, 1, layout->points + 1,
                  index_size, &offset, path));
    LBK_TRY(place(&m[LBK_GRAPH_NPZ_FORMAT], "format.npy", "|S3", 0, 0, 3, &offset, path));
    LBK_TRY(place(&m[LBK_GRAPH_NPZ_SHAPE], "shape.npy", "<i8", 1, 2, 8, &offset, path));
    LBK_TRY(place(&m[LBK_GRAPH_NPZ_DATA], "data.npy", "<f4", 1, values, 4, &offset, path));
    layout->directory_offset = offset;
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++)
        offset += CENTRAL_HEADER_FIXED + strlen(m[i].name) + ZIP64_CENTRAL_EXTRA;
    layout->directory_size = offset - layout->directory_offset;
    layout->file_size = offset + END_RECORDS;
    return LBK_OK;
}

static lbk_status check_shape(uint64_t points, uint64_t neighbors, unsigned index_size,
                              const char *path)
{
    LBK_FAIL_IF(neighbors > 0 && neighbors >= points, LBK_ERR_INTERNAL,
                "%s: internal: a graph of %" PRIu64 " points cannot have %" PRIu64
                " neighbours per point",
                path, points, neighbors);
    LBK_FAIL_IF(points >= MAX_VALUES || (neighbors > 0 && points > MAX_VALUES / neighbors),
                LBK_ERR_INPUT,
                "%s: a graph of %" PRIu64 " points with %" PRIu64
                " neighbours each is too large for one file",
                path, points, neighbors);
    LBK_FAIL_IF(index_size != 8 &&
                    (index_size != 4 || lbk_graph_npz_index_size(points, neighbors) != 4),
                LBK_ERR_INTERNAL, "%s: internal: %u-byte indices for %" PRIu64 " x %" PRIu64,
                path, index_size, points, neighbors);
    return LBK_OK;
}

lbk_status lbk_graph_npz_layout_make(lbk_graph_npz_layout *layout, uint64_t points,
                                     uint64_t neighbors, unsigned index_size, const char *path)
{
    memset(layout, 0, sizeof *layout);
    LBK_TRY(check_shape(points, neighbors, index_size, path));
    layout->points = points;
    layout->neighbors = neighbors;
    layout->index_size = index_size;
    layout->cols = points;
    layout->values = points * neighbors;
    return place_members(layout, path);
}

lbk_status lbk_graph_npz_layout_csr(lbk_graph_npz_layout *layout, uint64_t rows, uint64_t cols,
                                    uint64_t values, unsigned index_size, const char *path)
{
    memset(layout, 0, sizeof *layout);
    LBK_FAIL_IF(rows >= MAX_VALUES || values >= MAX_VALUES, LBK_ERR_INPUT,
                "%s: %" PRIu64 " rows with %" PRIu64 " entries are too many for one file", path,
                rows, values);
    const bool wide = rows > INT32_MAX || cols > INT32_MAX || values > INT32_MAX;
    LBK_FAIL_IF(index_size != 8 && (index_size != 4 || wide), LBK_ERR_INTERNAL,
                "%s: internal: %u-byte indices for %" PRIu64 " entries", path, index_size,
                values);
    layout->points = rows;
    layout->cols = cols;
    layout->values = values;
    layout->index_size = index_size;
    return place_members(layout, path);
}
