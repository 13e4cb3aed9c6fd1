/* A saved index loaded on another rank count (docs/design.md, "A saved
 * index"): the parts saved by P ranks become the row shards that a fresh
 * build on this run's P' ranks would have read from the reference file,
 * bit for bit, and the build then runs as usual (the spatial partition's
 * exact decomposition and the engine's build). Parts that are row shards
 * themselves are read where they overlap this rank's rows, streamed (a
 * tree's points through its node-to-row map), with no exchange. Parts of
 * the spatial partition hold rows from everywhere: each part's file is
 * read once, by one rank (rank r' reads the parts of the even split of P
 * over P'), and every row then goes to the rank whose shard holds it, in
 * one exchange of (id, label, point) records, and lands at its row. The
 * targets are read where the rows they cover overlap this rank's. Rows
 * move at the saved type's width (float32, or compact: uint8, int8 or
 * float16 rows, a brute index's or a tree's points). */
#include "index_impl.h"

#include "alloc_large.h"
#include "log.h"
#include "row_split.h"
#include "saved.h"
#include "try.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parts this rank reads, one after the other in its arrays. */
typedef struct {
    uint64_t rows;
    size_t row_bytes;      /* dim values of the saved type */
    unsigned char *points; /* rows * row_bytes */
    uint64_t *ids;
    int32_t *labels; /* NULL: no labels asked */
} parts_block;

/* The shard's rows as bytes, whatever their type. */
static unsigned char *shard_rows(lbk_dataset *shard)
{
    return shard->dtype == LBK_DTYPE_FLOAT32 ? (unsigned char *)shard->points
                                             : (unsigned char *)shard->raw;
}

static size_t shard_row_bytes(const lbk_dataset *shard)
{
    return (size_t)shard->dim * lbk_dataset_type_bytes(shard->dtype);
}

/* Part r's global ids into ids[0 .. n): its ids file, or its rows from
 * first_row on. */
static lbk_status read_ids(const char *dir, const char *m, int r, uint64_t n, uint64_t *ids)
{
    uint64_t bits = 0, first = 0;
    LBK_TRY(lbk_index_part_u64(dir, m, r, "id_bits", &bits));
    LBK_TRY(lbk_index_part_u64(dir, m, r, "first_row", &first));
    LBK_FAIL_IF(bits != 0 && bits != 32 && bits != 64, LBK_ERR_INPUT,
                "%s: saved index: r%d.id_bits is %" PRIu64, dir, r, bits);
    if (bits == 64)
        return lbk_index_part_read(dir, m, r, "ids", ids, n * 8);
    if (bits == 0) {
        for (uint64_t i = 0; i < n; i++)
            ids[i] = first + i;
        return LBK_OK;
    }
    lbk_status st = LBK_OK;
    uint32_t *narrow = lbk_alloc_large_logged(n + 1, 4, "saved ids", &st);
    if (st == LBK_OK)
        st = lbk_index_part_read(dir, m, r, "ids", narrow, n * 4);
    for (uint64_t i = 0; st == LBK_OK && i < n; i++)
        ids[i] = narrow[i];
    lbk_alloc_large_free(narrow);
    return st;
}

/* A tree's points are in tree order: node i is the part's row tree_ids[i]
 * (row: the bytes of a row at the saved type). */
static lbk_status read_tree_points(const char *dir, const char *m, int r, uint64_t n, size_t row,
                                   unsigned char *points)
{
    lbk_status st = LBK_OK;
    unsigned char *tree = lbk_alloc_large_logged(n + 1, row, "a saved tree", &st);
    uint32_t *rows = st == LBK_OK ? lbk_alloc_large_logged(n + 1, 4, "a saved tree", &st) : NULL;
    if (st == LBK_OK)
        st = lbk_index_part_read(dir, m, r, "tree_points", tree, n * row);
    if (st == LBK_OK)
        st = lbk_index_part_tree_rows(dir, m, r, n, rows);
    for (uint64_t i = 0; st == LBK_OK && i < n; i++)
        memcpy(points + rows[i] * row, tree + i * row, row);
    lbk_alloc_large_free(tree);
    lbk_alloc_large_free(rows);
    return st;
}

/* Part r's n rows into the block from row `at` on. */
static lbk_status read_whole_part(const char *dir, const char *m, int r, bool tree, uint64_t n,
                                  uint64_t at, parts_block *b)
{
    const uint64_t row = b->row_bytes;
    LBK_TRY(read_ids(dir, m, r, n, b->ids + at));
    if (b->labels)
        LBK_TRY(lbk_index_part_read(dir, m, r, "labels", b->labels + at, n * 4));
    if (tree)
        return read_tree_points(dir, m, r, n, b->row_bytes, b->points + at * row);
    return lbk_index_part_read(dir, m, r, "points", b->points + at * row, n * row);
}

static void block_free(parts_block *b)
{
    lbk_alloc_large_free(b->points);
    lbk_alloc_large_free(b->ids);
    lbk_alloc_large_free(b->labels);
    memset(b, 0, sizeof *b);
}

/* The parts [first, first + count) of P, read into one block. */
static lbk_status read_block(const char *dir, const char *m, int first, int count, bool tree,
                             bool labels, parts_block *b)
{
    uint64_t rows = 0, n = 0;
    for (int r = first; r < first + count; r++) {
        LBK_TRY(lbk_index_part_u64(dir, m, r, "rows", &n));
        rows += n;
    }
    lbk_status st = LBK_OK;
    b->rows = rows;
    b->points = lbk_alloc_large_logged(rows + 1, b->row_bytes, "saved points", &st);
    if (st == LBK_OK)
        b->ids = lbk_alloc_large_logged(rows + 1, 8, "saved ids", &st);
    if (st == LBK_OK && labels)
        b->labels = lbk_alloc_large_logged(rows + 1, 4, "saved labels", &st);
    uint64_t at = 0;
    for (int r = first; st == LBK_OK && r < first + count; r++) {
        st = lbk_index_part_u64(dir, m, r, "rows", &n);
        if (st == LBK_OK)
            st = read_whole_part(dir, m, r, tree, n, at, b);
        at += n;
    }
    return st;
}

/* A record of the exchange: the row's global id, its label, its point. */
static size_t record_bytes(size_t row_bytes) { return 8 + 4 + row_bytes; }

/* The block's rows as records, grouped by the rank whose shard holds them
 * (counts[r] for rank r, in block order within each). */
static lbk_status pack_block(const lbk_comm *comm, const parts_block *b, uint64_t total,
                             uint64_t *counts, unsigned char **pack)
{
    const int p = comm->size;
    const size_t rec = record_bytes(b->row_bytes), point = b->row_bytes;
    uint64_t *starts = malloc(((size_t)p + 1) * sizeof *starts);
    uint64_t *cursor = calloc((size_t)p, sizeof *cursor);
    lbk_status st = starts && cursor ? LBK_OK : LBK_ERR_NOMEM;
    if (st != LBK_OK)
        lbk_error("out of host memory for the saved rows' owners (%d ranks)", p);
    if (st == LBK_OK)
        *pack = lbk_alloc_large_logged(b->rows * rec + 1, 1, "the saved rows' exchange", &st);
    if (st == LBK_OK) {
        lbk_row_split_starts(total, p, NULL, starts);
        for (uint64_t i = 0; i < b->rows; i++)
            counts[lbk_row_split_find(starts, p, b->ids[i])]++;
        for (int r = 1; r < p; r++)
            cursor[r] = cursor[r - 1] + counts[r - 1];
        for (uint64_t i = 0; i < b->rows; i++) {
            unsigned char *at = *pack + cursor[lbk_row_split_find(starts, p, b->ids[i])]++ * rec;
            const int32_t label = b->labels ? b->labels[i] : -1;
            memcpy(at, &b->ids[i], 8);
            memcpy(at + 8, &label, 4);
            memcpy(at + 12, b->points + i * point, point);
        }
    }
    free(starts);
    free(cursor);
    return st;
}

/* The received records into the shard, each at its row; every row exactly
 * once, or the parts do not make the index the manifest says. */
static lbk_status place_records(const char *dir, const unsigned char *recv, uint64_t n,
                                lbk_dataset *shard)
{
    const size_t point = shard_row_bytes(shard), rec = record_bytes(point);
    unsigned char *rows = shard_rows(shard);
    lbk_status st = LBK_OK;
    unsigned char *seen =
        lbk_alloc_large_logged(shard->rows + 1, 1, "the saved rows' check", &st);
    LBK_TRY(st);
    memset(seen, 0, shard->rows);
    for (uint64_t i = 0; i < n && st == LBK_OK; i++) {
        const unsigned char *at = recv + i * rec;
        uint64_t id = 0;
        memcpy(&id, at, 8);
        const uint64_t row = id - shard->first_row;
        if (id < shard->first_row || row >= shard->rows || seen[row]) {
            lbk_error("%s: saved index: its parts hold row %" PRIu64 " twice or out of range",
                      dir, id);
            st = LBK_ERR_INPUT;
            break;
        }
        seen[row] = 1;
        if (shard->labels)
            memcpy(&shard->labels[row], at + 8, 4);
        memcpy(rows + row * point, at + 12, point);
    }
    if (st == LBK_OK && n != shard->rows) {
        lbk_error("%s: saved index: its parts hold %" PRIu64 " of this rank's %" PRIu64 " rows",
                  dir, n, shard->rows);
        st = LBK_ERR_INPUT;
    }
    lbk_alloc_large_free(seen);
    return st;
}

/* Collective: the block's rows to the ranks whose shards hold them. */
static lbk_status exchange_rows(const lbk_comm *comm, const char *dir, parts_block *b,
                                uint64_t total, lbk_status prep, lbk_dataset *shard)
{
    const size_t p = (size_t)comm->size;
    uint64_t *counts = calloc(p, sizeof *counts), *recv_counts = calloc(p, sizeof *recv_counts);
    unsigned char *pack = NULL;
    lbk_exchange_buffer recv = {0};
    uint64_t sent = 0, n = 0;
    lbk_status st = prep;
    if (st == LBK_OK && (!counts || !recv_counts)) {
        lbk_error("out of host memory for the saved rows' counts (%zu ranks)", p);
        st = LBK_ERR_NOMEM;
    }
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, st));
    st = pack_block(comm, b, total, counts, &pack);
    /* Packed, so the block goes before the exchange: its peak is still three
     * copies of about a shard (the shard allocated, the pack, the records
     * received), not four. Placing this rank's own records directly
     * (lbk_exchange_rows_own_placed) would save only its own share of the
     * pack and needs the receive offsets before the counts are exchanged. */
    block_free(b);
    LBK_TRY_GOTO(st,
                 lbk_exchange_rows(comm, st, pack, counts, record_bytes(shard_row_bytes(shard)),
                                   &recv, recv_counts, &sent));
    for (size_t r = 0; r < p; r++)
        n += recv_counts[r];
    st = place_records(dir, recv.data, n, shard);
cleanup:
    lbk_alloc_large_free(pack);
    lbk_exchange_buffer_free(&recv);
    free(counts);
    free(recv_counts);
    return st;
}

/* A row-ordered file's bytes [from, to) into dest. */
typedef struct {
    unsigned char *dest;
    uint64_t from, to;
} range_take;

static void take_range(void *user, const unsigned char *piece, uint64_t at, size_t n)
{
    const range_take *t = user;
    const uint64_t lo = at > t->from ? at : t->from;
    const uint64_t hi = at + n < t->to ? at + n : t->to;
    if (lo < hi)
        memcpy(t->dest + (lo - t->from), piece + (lo - at), (size_t)(hi - lo));
}

/* Part r's row-ordered file NAME (row_bytes a row): its rows [first, first
 * + count) into dest, the rest read past. */
static lbk_status read_row_range(const char *dir, const char *m, int r, const char *what,
                                 uint64_t part_rows, size_t row_bytes, uint64_t first,
                                 uint64_t count, void *dest)
{
    char name[64];
    snprintf(name, sizeof name, "r%d.%s", r, what);
    range_take t = {dest, first * row_bytes, (first + count) * row_bytes};
    return lbk_saved_read_pieces(dir, name, m, part_rows * row_bytes, take_range, &t);
}

/* A tree's points file: node i (bytes [i row, (i + 1) row)) is the part's
 * row rows[i]; the part's rows [first, first + count) go to dest. */
typedef struct {
    unsigned char *dest;
    size_t row;
    const uint32_t *rows;
    uint64_t first, count;
} tree_take;

static void take_tree(void *user, const unsigned char *piece, uint64_t at, size_t n)
{
    const tree_take *t = user;
    for (uint64_t i = at / t->row; i * t->row < at + n; i++) {
        const uint64_t row = (uint64_t)t->rows[i] - t->first;
        if (t->rows[i] < t->first || row >= t->count)
            continue;
        const uint64_t node = i * t->row;
        const uint64_t lo = node > at ? node : at;
        const uint64_t hi = node + t->row < at + n ? node + t->row : at + n;
        memcpy(t->dest + row * t->row + (lo - node), piece + (lo - at), (size_t)(hi - lo));
    }
}

static lbk_status read_tree_range(const char *dir, const char *m, int r, uint64_t n, size_t row,
                                  uint64_t first, uint64_t count, unsigned char *dest)
{
    lbk_status st = LBK_OK;
    uint32_t *rows = lbk_alloc_large_logged(n + 1, 4, "a saved tree's rows", &st);
    if (st == LBK_OK)
        st = lbk_index_part_tree_rows(dir, m, r, n, rows);
    char name[64];
    snprintf(name, sizeof name, "r%d.tree_points", r);
    tree_take t = {dest, row, rows, first, count};
    if (st == LBK_OK)
        st = lbk_saved_read_pieces(dir, name, m, n * row, take_tree, &t);
    lbk_alloc_large_free(rows);
    return st;
}

/* Whether the parts are row shards: rank r's rows follow rank r - 1's,
 * all of them in rank order. */
static bool row_shards(const char *m, int parts, uint64_t total)
{
    uint64_t next = 0;
    for (int r = 0; r < parts; r++) {
        char key[64];
        uint64_t bits = 1, first = 0, rows = 0;
        snprintf(key, sizeof key, "r%d.id_bits", r);
        lbk_saved_get_u64(m, key, &bits);
        snprintf(key, sizeof key, "r%d.first_row", r);
        lbk_saved_get_u64(m, key, &first);
        snprintf(key, sizeof key, "r%d.rows", r);
        if (!lbk_saved_get_u64(m, key, &rows) || bits != 0 || first != next)
            return false;
        next += rows;
    }
    return next == total;
}

/* The shard's rows from the row-shard parts that overlap it. */
static lbk_status read_shard_rows(const char *dir, const char *m, int parts, bool tree,
                                  lbk_dataset *shard)
{
    const uint64_t lo = shard->first_row, hi = lo + shard->rows;
    const size_t row = shard_row_bytes(shard);
    for (int r = 0; r < parts; r++) {
        uint64_t first = 0, n = 0;
        LBK_TRY(lbk_index_part_u64(dir, m, r, "first_row", &first));
        LBK_TRY(lbk_index_part_u64(dir, m, r, "rows", &n));
        const uint64_t a = first > lo ? first : lo, b = first + n < hi ? first + n : hi;
        if (a >= b)
            continue;
        if (shard->labels)
            LBK_TRY(read_row_range(dir, m, r, "labels", n, 4, a - first, b - a,
                                   shard->labels + (a - lo)));
        unsigned char *dest = shard_rows(shard) + (a - lo) * row;
        if (tree)
            LBK_TRY(read_tree_range(dir, m, r, n, row, a - first, b - a, dest));
        else
            LBK_TRY(read_row_range(dir, m, r, "points", n, row, a - first, b - a, dest));
    }
    return LBK_OK;
}

/* This rank's targets of the rows [first, first + rows): from each saved
 * rank whose targets cover some of them. */
static lbk_status read_shard_targets(const char *dir, const char *m, int parts, uint64_t first,
                                     uint64_t rows, double *out)
{
    uint64_t found = 0;
    for (int r = 0; r < parts && found < rows; r++) {
        uint64_t tf = 0, tn = 0;
        LBK_TRY(lbk_index_part_u64(dir, m, r, "targets_first", &tf));
        LBK_TRY(lbk_index_part_u64(dir, m, r, "targets_rows", &tn));
        const uint64_t lo = tf > first + found ? tf : first + found;
        const uint64_t hi = tf + tn < first + rows ? tf + tn : first + rows;
        if (lo >= hi || lo != first + found)
            continue;
        LBK_TRY(read_row_range(dir, m, r, "targets", tn, sizeof(double), lo - tf, hi - lo,
                               out + found));
        found += hi - lo;
    }
    LBK_FAIL_IF(found != rows, LBK_ERR_INPUT,
                "%s: saved index: its targets cover %" PRIu64 " of the rows %" PRIu64
                " .. %" PRIu64 " this rank needs",
                dir, found, first, first + rows);
    return LBK_OK;
}

lbk_status lbk_index_reshape_read(lbk_status prep, const char *dir, const char *manifest,
                                  const lbk_comm *comm, int parts, bool tree, int dim,
                                  lbk_dtype type, uint64_t reference_rows, bool labels,
                                  lbk_dataset *shard, double **targets, uint64_t *targets_first)
{
    uint64_t first = 0, rows = 0, part_first = 0, part_count = 0;
    lbk_row_split_range(reference_rows, comm->size, comm->rank, &first, &rows);
    *shard = (lbk_dataset){.rows = rows, .dim = dim, .first_row = first, .dtype = type};
    lbk_status st = prep;
    void *points = NULL;
    if (st == LBK_OK)
        points =
            lbk_alloc_large_logged(rows + 1, shard_row_bytes(shard), "the reference shard", &st);
    if (type == LBK_DTYPE_FLOAT32)
        shard->points = points;
    else
        shard->raw = points;
    if (st == LBK_OK && labels)
        shard->labels = lbk_alloc_large_logged(rows + 1, 4, "reference labels", &st);
    if (row_shards(manifest, parts, reference_rows)) {
        if (st == LBK_OK)
            st = read_shard_rows(dir, manifest, parts, tree, shard);
    } else {
        lbk_row_split_range((uint64_t)parts, comm->size, comm->rank, &part_first, &part_count);
        parts_block b = {.row_bytes = shard_row_bytes(shard)};
        if (st == LBK_OK)
            st = read_block(dir, manifest, (int)part_first, (int)part_count, tree, labels, &b);
        st = exchange_rows(comm, dir, &b, reference_rows, st, shard);
        block_free(&b);
    }
    if (st == LBK_OK && targets) {
        *targets_first = first;
        *targets = lbk_alloc_large_logged(rows + 1, sizeof(double), "reference targets", &st);
        if (st == LBK_OK)
            st = read_shard_targets(dir, manifest, parts, first, rows, *targets);
    }
    return st;
}
