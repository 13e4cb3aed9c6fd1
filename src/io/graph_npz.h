/* The kNN graph as SciPy's sparse CSR .npz file, the one that
 * scipy.sparse.save_npz(path, m, compressed=False) writes and
 * scipy.sparse.load_npz reads: a ZIP archive of five .npy members, in
 * SciPy's order, indices.npy, indptr.npy, format.npy (b'csr', dtype |S3,
 * shape ()), shape.npy ((N, N) as <i8) and data.npy (<f4 distances).
 * Row i holds exactly R entries: indptr[i] = i * R.
 *
 * Every member is STORED (not compressed), so with N and R every byte's
 * place is known before any is written: ranks write disjoint row slices of
 * one file at once, at explicit offsets, without seeing each other's data,
 * and one rank finishes the file from the slices' CRCs. ZIP64 records are
 * written always (one code path for files of any size; zipfile, NumPy and
 * unzip accept them on small files too). The CRC sits in each local header,
 * which the finisher writes last: no data descriptors.
 *
 *   lbk_graph_npz_layout_make     every rank, the same arguments
 *   lbk_graph_npz_write_rows      each slice, on any rank, in any order
 *   lbk_graph_npz_finish          one rank, with every slice's result
 *
 * The file must exist and be writable by every rank before the slices are
 * written (one rank creates it, empty or truncated); the finisher's writes
 * end at layout.file_size. */
#ifndef LBK_GRAPH_NPZ_H
#define LBK_GRAPH_NPZ_H

#include "status.h"

#include <stddef.h>
#include <stdint.h>

/* The members in file order (SciPy's). */
typedef enum {
    LBK_GRAPH_NPZ_INDICES,
    LBK_GRAPH_NPZ_INDPTR,
    LBK_GRAPH_NPZ_FORMAT,
    LBK_GRAPH_NPZ_SHAPE,
    LBK_GRAPH_NPZ_DATA,
    LBK_GRAPH_NPZ_MEMBERS
} lbk_graph_npz_member_id;

/* NumPy pads a version 1.0 header to a multiple of 64 bytes, with room for
 * the first axis to grow to 21 digits: 128 bytes for every member here. */
#define LBK_GRAPH_NPZ_NPY_HEADER_MAX 128

typedef struct {
    const char *name;        /* "indices.npy" */
    uint64_t entry_offset;   /* its local file header */
    uint64_t content_offset; /* its bytes (what the CRC covers) begin: the .npy header */
    uint64_t array_offset;   /* content_offset + npy_header_size */
    uint64_t array_size;     /* bytes of values */
    size_t npy_header_size;
    unsigned char npy_header[LBK_GRAPH_NPZ_NPY_HEADER_MAX];
} lbk_graph_npz_member;

typedef struct {
    uint64_t points;     /* N: the matrix is N x N */
    uint64_t neighbors;  /* R entries per row */
    unsigned index_size; /* 4 (<i4) or 8 (<i8): indices and indptr */
    uint64_t cols;       /* the matrix's columns: N, or a CSR layout's */
    uint64_t values;     /* stored entries: N * R, or a CSR layout's */
    lbk_graph_npz_member member[LBK_GRAPH_NPZ_MEMBERS];
    uint64_t directory_offset; /* the central directory */
    uint64_t directory_size;   /* then the ZIP64 end records and the end record */
    uint64_t file_size;
} lbk_graph_npz_layout;

/* SciPy's choice: 8 where N or N * R exceeds INT32_MAX, else 4. */
unsigned lbk_graph_npz_index_size(uint64_t points, uint64_t neighbors);

/* The layout of the graph of `points` points with `neighbors` per row
 * (below points; 0 when points is 0 or 1) and index_size 4 or 8 (4 only
 * where lbk_graph_npz_index_size allows it; 8 always may be chosen). path
 * names the file in messages. A pure function of its arguments. */
lbk_status lbk_graph_npz_layout_make(lbk_graph_npz_layout *layout, uint64_t points,
                                     uint64_t neighbors, unsigned index_size, const char *path);

/* A CSR layout of any row lengths (task radius): `rows` x `cols` with
 * `values` entries in all and index_size 4 or 8 (SciPy's choice: 8 where
 * rows, cols or values exceed INT32_MAX). Its writer puts the arrays'
 * bytes at the members' array_offset itself, every indptr entry
 * included, and finishes with lbk_graph_npz_finish_read. */
lbk_status lbk_graph_npz_layout_csr(lbk_graph_npz_layout *layout, uint64_t rows, uint64_t cols,
                                    uint64_t values, unsigned index_size, const char *path);

/* Writes `size` bytes at `offset`; logs its own error. */
typedef lbk_status (*lbk_graph_npz_write_fn)(void *context, uint64_t offset, const void *data,
                                             size_t size);

/* Where the bytes go: write_at(context, ...) when set, else pwrite on fd.
 * path names the file in messages. */
typedef struct {
    const char *path;
    int fd;
    lbk_graph_npz_write_fn write_at;
    void *context;
} lbk_graph_npz_sink;

/* Rows [begin, end) of the graph: row begin + i's R neighbours are
 * ids[i * stride + j] at distances[i * stride + j], j < R (stride >= R;
 * neither array is read when R is 0). */
typedef struct {
    uint64_t begin, end;
    const float *distances;
    const uint64_t *ids;
    size_t stride;
} lbk_graph_npz_rows;

/* What the finisher needs of a written slice: its rows and the CRC-32 of
 * the bytes it wrote of each array. No padding: it may travel as bytes. */
typedef struct {
    uint64_t begin, end;
    uint32_t crc_data, crc_indices, crc_indptr;
    uint32_t reserved; /* 0 */
} lbk_graph_npz_slice;

/* Writes the rows' distances, neighbour ids and indptr entries at their
 * places and describes them in *slice. An id that is not below N, or is the
 * row itself, is an internal error (nothing more is written). Slices of one
 * file may be written concurrently, by threads or ranks, in any order. */
lbk_status lbk_graph_npz_write_rows(const lbk_graph_npz_layout *layout,
                                    const lbk_graph_npz_sink *sink,
                                    const lbk_graph_npz_rows *rows, lbk_graph_npz_slice *slice);

/* Completes a CSR layout's file, whose indices, indptr and data arrays are
 * written: their CRCs read back through `read_fd` (the file open for
 * reading), then the headers, the small members and the directory. */
lbk_status lbk_graph_npz_finish_read(const lbk_graph_npz_layout *layout,
                                     const lbk_graph_npz_sink *sink, int read_fd);

/* Extends *slice by `next`, the slice that follows it (next->begin ==
 * slice->end): one slice for rows written in several pieces. */
void lbk_graph_npz_slice_append(const lbk_graph_npz_layout *layout, lbk_graph_npz_slice *slice,
                                const lbk_graph_npz_slice *next);

/* Completes the file: the .npy headers, the small members, indptr[N], the
 * local headers with their CRCs, the central directory and the end records.
 * slices: every slice written, in row order, contiguous from row 0 to N
 * (empty ones allowed); anything else is an internal error. */
lbk_status lbk_graph_npz_finish(const lbk_graph_npz_layout *layout,
                                const lbk_graph_npz_sink *sink, const lbk_graph_npz_slice *slices,
                                size_t count);

#endif
