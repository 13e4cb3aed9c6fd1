/* Writing a graph .npz (graph_npz.h): a slice's values through a bounded
 * buffer, CRC-32 by libdeflate on the way out; then the finisher combines the
 * slices' CRCs (zlib's crc32_combine needs only their lengths) and writes
 * the headers around them. All multi-byte values are little-endian. */
#include "graph_npz.h"

#include "log.h"
#include "try.h"

#include <errno.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

_Static_assert(sizeof(z_off_t) >= 8, "crc32_combine must take lengths above 4 GiB");

#define CHUNK_BYTES ((size_t)1 << 18)
#define ZIP_VERSION 45                          /* 4.5: ZIP64 */
#define ZIP_MADE_BY (3 << 8 | ZIP_VERSION)      /* on Unix */
#define ZIP_DATE_1980 ((1 << 5) | 1)            /* 1980-01-01 00:00, as NumPy writes */
#define ZIP_UNIX_FILE ((uint32_t)0100644 << 16) /* a regular file, rw-r--r-- */
#define ZIP_SATURATED 0xffffffffu               /* "see the ZIP64 field" */

static lbk_status sink_write(const lbk_graph_npz_sink *sink, uint64_t offset, const void *data,
                             size_t size)
{
    if (sink->write_at)
        return sink->write_at(sink->context, offset, data, size);
    const unsigned char *p = data;
    while (size > 0) {
        const ssize_t n = pwrite(sink->fd, p, size, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        LBK_FAIL_IF(n <= 0, LBK_ERR_IO, "%s: writing %zu bytes at byte %" PRIu64 " failed: %s",
                    sink->path, size, offset, n < 0 ? strerror(errno) : "nothing written");
        p += n;
        size -= (size_t)n;
        offset += (uint64_t)n;
    }
    return LBK_OK;
}

/* ---- bytes ---------------------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, unsigned size)
{
    for (unsigned i = 0; i < size; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Records built in a fixed buffer; an overflow is remembered, not written. */
typedef struct {
    unsigned char bytes[1024];
    size_t used;
    bool overflow;
} record;

static void rec_bytes(record *r, const void *p, size_t n)
{
    if (r->overflow || n > sizeof r->bytes - r->used) {
        r->overflow = true;
        return;
    }
    memcpy(r->bytes + r->used, p, n);
    r->used += n;
}

static void rec_le(record *r, uint64_t v, unsigned size)
{
    unsigned char b[8];
    put_le(b, v, size);
    rec_bytes(r, b, size);
}

/* ---- a slice -------------------------------------------------------------- */

/* Values into a buffer, written at consecutive offsets as it fills. */
typedef struct {
    const lbk_graph_npz_sink *sink;
    unsigned char *buf;
    size_t used;
    uint64_t offset;
    uint32_t crc;
} chunk;

static lbk_status chunk_flush(chunk *c)
{
    if (c->used == 0)
        return LBK_OK;
    c->crc = libdeflate_crc32(c->crc, c->buf, c->used);
    LBK_TRY(sink_write(c->sink, c->offset, c->buf, c->used));
    c->offset += c->used;
    c->used = 0;
    return LBK_OK;
}

static lbk_status chunk_put(chunk *c, uint64_t v, unsigned size)
{
    if (c->used + size > CHUNK_BYTES)
        LBK_TRY(chunk_flush(c));
    put_le(c->buf + c->used, v, size);
    c->used += size;
    return LBK_OK;
}

static void chunk_start(chunk *c, const lbk_graph_npz_member *m, uint64_t first_value,
                        unsigned value_size)
{
    c->used = 0;
    c->offset = m->array_offset + first_value * value_size;
    c->crc = 0;
}

static lbk_status put_distances(chunk *c, const lbk_graph_npz_layout *layout,
                                const lbk_graph_npz_rows *rows)
{
    const uint64_t R = layout->neighbors;
    chunk_start(c, &layout->member[LBK_GRAPH_NPZ_DATA], rows->begin * R, 4);
    for (uint64_t i = 0; i < rows->end - rows->begin; i++) {
        const float *d = rows->distances + i * rows->stride;
        for (uint64_t j = 0; j < R; j++) {
            uint32_t bits;
            memcpy(&bits, &d[j], sizeof bits);
            LBK_TRY(chunk_put(c, bits, 4));
        }
    }
    return chunk_flush(c);
}

static lbk_status put_ids(chunk *c, const lbk_graph_npz_layout *layout,
                          const lbk_graph_npz_rows *rows)
{
    const uint64_t R = layout->neighbors, N = layout->points;
    chunk_start(c, &layout->member[LBK_GRAPH_NPZ_INDICES], rows->begin * R, layout->index_size);
    for (uint64_t i = 0; i < rows->end - rows->begin; i++) {
        const uint64_t row = rows->begin + i, *id = rows->ids + i * rows->stride;
        for (uint64_t j = 0; j < R; j++) {
            LBK_FAIL_IF(id[j] >= N || id[j] == row, LBK_ERR_INTERNAL,
                        "%s: internal: graph row %" PRIu64 "'s neighbour %" PRIu64
                        " is %s (id %" PRIu64 ")",
                        c->sink->path, row, j, id[j] == row ? "the row itself" : "no point",
                        id[j]);
            LBK_TRY(chunk_put(c, id[j], layout->index_size));
        }
    }
    return chunk_flush(c);
}

static lbk_status put_indptr(chunk *c, const lbk_graph_npz_layout *layout,
                             const lbk_graph_npz_rows *rows)
{
    chunk_start(c, &layout->member[LBK_GRAPH_NPZ_INDPTR], rows->begin, layout->index_size);
    for (uint64_t row = rows->begin; row < rows->end; row++)
        LBK_TRY(chunk_put(c, row * layout->neighbors, layout->index_size));
    return chunk_flush(c);
}

static lbk_status check_rows(const lbk_graph_npz_layout *layout, const lbk_graph_npz_rows *rows,
                             const char *path)
{
    LBK_FAIL_IF(rows->begin > rows->end || rows->end > layout->points, LBK_ERR_INTERNAL,
                "%s: internal: graph rows %" PRIu64 "..%" PRIu64 " of %" PRIu64, path,
                rows->begin, rows->end, layout->points);
    const bool values = rows->end > rows->begin && layout->neighbors > 0;
    LBK_FAIL_IF(values && (rows->stride < layout->neighbors || !rows->distances || !rows->ids),
                LBK_ERR_INTERNAL, "%s: internal: graph rows of %zu values for %" PRIu64, path,
                rows->stride, layout->neighbors);
    return LBK_OK;
}

lbk_status lbk_graph_npz_write_rows(const lbk_graph_npz_layout *layout,
                                    const lbk_graph_npz_sink *sink,
                                    const lbk_graph_npz_rows *rows, lbk_graph_npz_slice *slice)
{
    memset(slice, 0, sizeof *slice);
    LBK_TRY(check_rows(layout, rows, sink->path));
    chunk c = {.sink = sink, .buf = malloc(CHUNK_BYTES)};
    LBK_FAIL_IF(!c.buf, LBK_ERR_NOMEM, "%s: out of memory for a %zu-byte write buffer",
                sink->path, CHUNK_BYTES);
    lbk_status st;
    LBK_TRY_GOTO(st, put_distances(&c, layout, rows));
    slice->crc_data = c.crc;
    LBK_TRY_GOTO(st, put_ids(&c, layout, rows));
    slice->crc_indices = c.crc;
    LBK_TRY_GOTO(st, put_indptr(&c, layout, rows));
    slice->crc_indptr = c.crc;
    slice->begin = rows->begin;
    slice->end = rows->end;
cleanup:
    free(c.buf);
    return st;
}

/* ---- the finisher --------------------------------------------------------- */

static lbk_status check_slices(const lbk_graph_npz_layout *layout,
                               const lbk_graph_npz_slice *slices, size_t count, const char *path)
{
    uint64_t next = 0;
    for (size_t k = 0; k < count; k++) {
        LBK_FAIL_IF(slices[k].begin != next || slices[k].end < slices[k].begin, LBK_ERR_INTERNAL,
                    "%s: internal: graph slice %zu holds rows %" PRIu64 "..%" PRIu64
                    ", not rows from %" PRIu64 " on",
                    path, k, slices[k].begin, slices[k].end, next);
        next = slices[k].end;
    }
    LBK_FAIL_IF(next != layout->points, LBK_ERR_INTERNAL,
                "%s: internal: the graph slices end at row %" PRIu64 " of %" PRIu64, path, next,
                layout->points);
    return LBK_OK;
}

/* The bytes after each member's .npy header that the finisher writes:
 * format's and shape's values, indptr's last entry (N * R). */
typedef struct {
    unsigned char format[3], shape[16], indptr_last[8];
} own_values;

static void own_values_make(const lbk_graph_npz_layout *layout, own_values *v)
{
    memcpy(v->format, "csr", 3);
    put_le(v->shape, layout->points, 8);
    put_le(v->shape + 8, layout->cols, 8);
    put_le(v->indptr_last, layout->values, layout->index_size);
}

/* Each member's CRC: its .npy header, then its values, slice by slice. */
static void member_crcs(const lbk_graph_npz_layout *layout, const lbk_graph_npz_slice *slices,
                        size_t count, const own_values *v, uint32_t crc[LBK_GRAPH_NPZ_MEMBERS])
{
    const lbk_graph_npz_member *m = layout->member;
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++)
        crc[i] = (uint32_t)crc32(0, m[i].npy_header, (uInt)m[i].npy_header_size);
    const uint64_t R = layout->neighbors, w = layout->index_size;
    for (size_t k = 0; k < count; k++) {
        const uint64_t rows = slices[k].end - slices[k].begin;
        crc[LBK_GRAPH_NPZ_DATA] = (uint32_t)crc32_combine(
            crc[LBK_GRAPH_NPZ_DATA], slices[k].crc_data, (z_off_t)(rows * R * 4));
        crc[LBK_GRAPH_NPZ_INDICES] = (uint32_t)crc32_combine(
            crc[LBK_GRAPH_NPZ_INDICES], slices[k].crc_indices, (z_off_t)(rows * R * w));
        crc[LBK_GRAPH_NPZ_INDPTR] = (uint32_t)crc32_combine(
            crc[LBK_GRAPH_NPZ_INDPTR], slices[k].crc_indptr, (z_off_t)(rows * w));
    }
    crc[LBK_GRAPH_NPZ_INDPTR] =
        (uint32_t)crc32(crc[LBK_GRAPH_NPZ_INDPTR], v->indptr_last, (uInt)w);
    crc[LBK_GRAPH_NPZ_FORMAT] = (uint32_t)crc32(crc[LBK_GRAPH_NPZ_FORMAT], v->format, 3);
    crc[LBK_GRAPH_NPZ_SHAPE] = (uint32_t)crc32(crc[LBK_GRAPH_NPZ_SHAPE], v->shape, 16);
}

static uint64_t member_size(const lbk_graph_npz_member *m)
{
    return m->npy_header_size + m->array_size;
}

/* Version needed, flags, method (stored), time and date, CRC, both sizes
 * deferred to the ZIP64 field, the name's length: what both kinds of
 * header share. */
static void rec_entry_common(record *r, const lbk_graph_npz_member *m, uint32_t crc)
{
    rec_le(r, ZIP_VERSION, 2);
    rec_le(r, 0, 2);
    rec_le(r, 0, 2);
    rec_le(r, 0, 2);
    rec_le(r, ZIP_DATE_1980, 2);
    rec_le(r, crc, 4);
    rec_le(r, ZIP_SATURATED, 4);
    rec_le(r, ZIP_SATURATED, 4);
    rec_le(r, strlen(m->name), 2);
}

/* A local header, then the member's .npy header and, for format and shape,
 * its values: all contiguous. */
static lbk_status write_entry(const lbk_graph_npz_layout *layout, const lbk_graph_npz_sink *sink,
                              int i, uint32_t crc, const own_values *v)
{
    const lbk_graph_npz_member *m = &layout->member[i];
    record r = {.used = 0};
    rec_le(&r, 0x04034b50, 4);
    rec_entry_common(&r, m, crc);
    rec_le(&r, 20, 2); /* the extra field: ZIP64, both sizes */
    rec_bytes(&r, m->name, strlen(m->name));
    rec_le(&r, 1, 2);
    rec_le(&r, 16, 2);
    rec_le(&r, member_size(m), 8);
    rec_le(&r, member_size(m), 8);
    LBK_FAIL_IF(r.overflow || m->entry_offset + r.used != m->content_offset, LBK_ERR_INTERNAL,
                "%s: internal: %s's local header does not fit its layout", sink->path, m->name);
    rec_bytes(&r, m->npy_header, m->npy_header_size);
    if (i == LBK_GRAPH_NPZ_FORMAT)
        rec_bytes(&r, v->format, sizeof v->format);
    if (i == LBK_GRAPH_NPZ_SHAPE)
        rec_bytes(&r, v->shape, sizeof v->shape);
    return sink_write(sink, m->entry_offset, r.bytes, r.used);
}

static void rec_central_entry(record *r, const lbk_graph_npz_member *m, uint32_t crc)
{
    rec_le(r, 0x02014b50, 4);
    rec_le(r, ZIP_MADE_BY, 2);
    rec_entry_common(r, m, crc);
    rec_le(r, 28, 2); /* the extra field: ZIP64, both sizes and the offset */
    rec_le(r, 0, 2);  /* no comment */
    rec_le(r, 0, 2);  /* disk 0 */
    rec_le(r, 0, 2);  /* internal attributes: binary */
    rec_le(r, ZIP_UNIX_FILE, 4);
    rec_le(r, ZIP_SATURATED, 4);
    rec_bytes(r, m->name, strlen(m->name));
    rec_le(r, 1, 2);
    rec_le(r, 24, 2);
    rec_le(r, member_size(m), 8);
    rec_le(r, member_size(m), 8);
    rec_le(r, m->entry_offset, 8);
}

/* The ZIP64 end of central directory record, its locator and the end
 * record, whose 32-bit fields hold the values where they fit. */
static void rec_end(record *r, const lbk_graph_npz_layout *layout)
{
    const uint64_t zip64_end = layout->directory_offset + layout->directory_size;
    rec_le(r, 0x06064b50, 4);
    rec_le(r, 44, 8); /* the record's size after this field */
    rec_le(r, ZIP_MADE_BY, 2);
    rec_le(r, ZIP_VERSION, 2);
    rec_le(r, 0, 4);
    rec_le(r, 0, 4);
    rec_le(r, LBK_GRAPH_NPZ_MEMBERS, 8);
    rec_le(r, LBK_GRAPH_NPZ_MEMBERS, 8);
    rec_le(r, layout->directory_size, 8);
    rec_le(r, layout->directory_offset, 8);
    rec_le(r, 0x07064b50, 4);
    rec_le(r, 0, 4);
    rec_le(r, zip64_end, 8);
    rec_le(r, 1, 4); /* one disk */
    rec_le(r, 0x06054b50, 4);
    rec_le(r, 0, 2);
    rec_le(r, 0, 2);
    rec_le(r, LBK_GRAPH_NPZ_MEMBERS, 2);
    rec_le(r, LBK_GRAPH_NPZ_MEMBERS, 2);
    rec_le(r, layout->directory_size < ZIP_SATURATED ? layout->directory_size : ZIP_SATURATED, 4);
    rec_le(r, layout->directory_offset < ZIP_SATURATED ? layout->directory_offset : ZIP_SATURATED,
           4);
    rec_le(r, 0, 2); /* no comment */
}

static lbk_status write_directory(const lbk_graph_npz_layout *layout,
                                  const lbk_graph_npz_sink *sink,
                                  const uint32_t crc[LBK_GRAPH_NPZ_MEMBERS])
{
    record r = {.used = 0};
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++)
        rec_central_entry(&r, &layout->member[i], crc[i]);
    const bool directory_fits = r.used == layout->directory_size;
    rec_end(&r, layout);
    LBK_FAIL_IF(r.overflow || !directory_fits ||
                    layout->directory_offset + r.used != layout->file_size,
                LBK_ERR_INTERNAL, "%s: internal: the central directory does not fit its layout",
                sink->path);
    return sink_write(sink, layout->directory_offset, r.bytes, r.used);
}

lbk_status lbk_graph_npz_finish(const lbk_graph_npz_layout *layout,
                                const lbk_graph_npz_sink *sink, const lbk_graph_npz_slice *slices,
                                size_t count)
{
    LBK_TRY(check_slices(layout, slices, count, sink->path));
    own_values v;
    own_values_make(layout, &v);
    uint32_t crc[LBK_GRAPH_NPZ_MEMBERS];
    member_crcs(layout, slices, count, &v, crc);
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++)
        LBK_TRY(write_entry(layout, sink, i, crc[i], &v));
    const lbk_graph_npz_member *indptr = &layout->member[LBK_GRAPH_NPZ_INDPTR];
    LBK_TRY(sink_write(sink, indptr->array_offset + layout->points * layout->index_size,
                       v.indptr_last, layout->index_size));
    return write_directory(layout, sink, crc);
}

void lbk_graph_npz_slice_append(const lbk_graph_npz_layout *layout, lbk_graph_npz_slice *slice,
                                const lbk_graph_npz_slice *next)
{
    const uint64_t rows = next->end - next->begin, slots = rows * layout->neighbors;
    slice->crc_data =
        (uint32_t)crc32_combine(slice->crc_data, next->crc_data, (z_off_t)(slots * 4));
    slice->crc_indices = (uint32_t)crc32_combine(slice->crc_indices, next->crc_indices,
                                                 (z_off_t)(slots * layout->index_size));
    slice->crc_indptr = (uint32_t)crc32_combine(slice->crc_indptr, next->crc_indptr,
                                                (z_off_t)(rows * layout->index_size));
    slice->end = next->end;
}

/* The CRC of `size` bytes at `offset`, read back. */
static lbk_status crc_read(int fd, uint64_t offset, uint64_t size, uint32_t *crc,
                           const char *path)
{
    unsigned char *buf = malloc(CHUNK_BYTES);
    LBK_FAIL_IF(!buf, LBK_ERR_NOMEM, "%s: out of host memory to read it back", path);
    lbk_status st = LBK_OK;
    while (size > 0 && st == LBK_OK) {
        const size_t want = size < CHUNK_BYTES ? (size_t)size : CHUNK_BYTES;
        const ssize_t n = pread(fd, buf, want, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            lbk_error("%s: reading back %zu bytes at byte %" PRIu64 " failed: %s", path, want,
                      offset, n < 0 ? strerror(errno) : "end of file");
            st = LBK_ERR_IO;
            break;
        }
        *crc = (uint32_t)crc32(*crc, buf, (uInt)n);
        offset += (uint64_t)n;
        size -= (uint64_t)n;
    }
    free(buf);
    return st;
}

lbk_status lbk_graph_npz_finish_read(const lbk_graph_npz_layout *layout,
                                     const lbk_graph_npz_sink *sink, int read_fd)
{
    own_values v;
    own_values_make(layout, &v);
    const lbk_graph_npz_member *m = layout->member;
    uint32_t crc[LBK_GRAPH_NPZ_MEMBERS];
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++)
        crc[i] = (uint32_t)crc32(0, m[i].npy_header, (uInt)m[i].npy_header_size);
    const int arrays[] = {LBK_GRAPH_NPZ_INDICES, LBK_GRAPH_NPZ_INDPTR, LBK_GRAPH_NPZ_DATA};
    for (int a = 0; a < 3; a++)
        LBK_TRY(crc_read(read_fd, m[arrays[a]].array_offset, m[arrays[a]].array_size,
                         &crc[arrays[a]], sink->path));
    crc[LBK_GRAPH_NPZ_FORMAT] = (uint32_t)crc32(crc[LBK_GRAPH_NPZ_FORMAT], v.format, 3);
    crc[LBK_GRAPH_NPZ_SHAPE] = (uint32_t)crc32(crc[LBK_GRAPH_NPZ_SHAPE], v.shape, 16);
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++)
        LBK_TRY(write_entry(layout, sink, i, crc[i], &v));
    return write_directory(layout, sink, crc);
}
