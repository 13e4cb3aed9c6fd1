/* A saved index (docs/design.md, "A saved index"): each rank's part of a
 * built index as flat files (saved.h), and the index created from them
 * without reading the reference set; on the saved rank count also without
 * redistributing it or building a tree (on another count index_reshape.c
 * regroups the rows and the ordinary build follows). Per rank R: rR.labels, rR.ids (spatial), and either the k-d
 * tree's arrays (rR.tree_points, rR.tree_ids, rR.tree_dims), from which
 * the shard's rows are put back in shard order, or the brute engine's
 * rows (rR.points); under the spatial partition, rank 0 also writes the
 * replicated top tree (toptree.*). */
#include "index.h"

#include "alloc_large.h"
#include "batch_impl.h"
#include "engine_params.h"
#include "log.h"
#include "saved.h"
#include "timer.h"
#include "try.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lbk_index_saved {
    lbk_engine_image engine;
    bool has_top;
    lbk_toptree top;
    double *targets; /* saved with targets and asked for */
    uint64_t targets_first, targets_rows;
    bool rebuild; /* saved on another rank count: the shard is the rows to build from */
};

static lbk_status line(char *lines, size_t size, size_t *used, const char *key, uint64_t value)
{
    const int w = snprintf(lines + *used, size - *used, "%s = %" PRIu64 "\n", key, value);
    LBK_FAIL_IF(w < 0 || (size_t)w >= size - *used, LBK_ERR_INTERNAL,
                "internal: manifest lines overflow at %s", key);
    *used += (size_t)w;
    return LBK_OK;
}

static const char *rank_name(char *buf, size_t size, int rank, const char *what)
{
    snprintf(buf, size, "r%d.%s", rank, what);
    return buf;
}

static lbk_status save_top(const lbk_toptree *t, const char *dir, char *lines, size_t size,
                           size_t *used)
{
    const uint64_t boxes = (uint64_t)t->ranks * (uint64_t)t->dim * sizeof(float);
    LBK_TRY(line(lines, size, used, "toptree.node_bytes", sizeof *t->nodes));
    LBK_TRY(lbk_saved_write(dir, "toptree.nodes", t->nodes, (uint64_t)t->count * sizeof *t->nodes,
                            lines, size, used));
    LBK_TRY(lbk_saved_write(dir, "toptree.owned", t->owned, (uint64_t)t->ranks * 8, lines, size,
                            used));
    LBK_TRY(lbk_saved_write(dir, "toptree.lo", t->lo, boxes, lines, size, used));
    return lbk_saved_write(dir, "toptree.hi", t->hi, boxes, lines, size, used);
}

static lbk_status save_rows(const lbk_index *s, const char *dir, char *lines, size_t size,
                            size_t *used)
{
    const lbk_dataset *d = &s->shard;
    const int r = s->comm->rank;
    char key[64];
    LBK_TRY(line(lines, size, used, rank_name(key, sizeof key, r, "rows"), d->rows));
    LBK_TRY(line(lines, size, used, rank_name(key, sizeof key, r, "first_row"), d->first_row));
    const int bits = d->ids32 ? 32 : d->ids ? 64 : 0;
    LBK_TRY(line(lines, size, used, rank_name(key, sizeof key, r, "id_bits"), (uint64_t)bits));
    if (bits)
        LBK_TRY(lbk_saved_write(dir, rank_name(key, sizeof key, r, "ids"),
                                bits == 32 ? (const void *)d->ids32 : (const void *)d->ids,
                                d->rows * (uint64_t)bits / 8, lines, size, used));
    if (d->labels)
        LBK_TRY(lbk_saved_write(dir, rank_name(key, sizeof key, r, "labels"), d->labels,
                                d->rows * 4, lines, size, used));
    return LBK_OK;
}

/* This rank's files and their lines; rank 0's include the top tree. */
static lbk_status save_rank(const lbk_index *s, const char *dir, char *lines, size_t size,
                            size_t *used)
{
    const int r = s->comm->rank;
    const uint64_t n = s->shard.rows, dim = (uint64_t)s->shape.dim;
    char key[64];
    LBK_TRY(save_rows(s, dir, lines, size, used));
    const lbk_dataset *d = &s->shard;
    lbk_engine_image image;
    lbk_status st = lbk_engine_export(s->engine, &image);
    /* The brute engine's rows at their own width (float32, or compact). */
    if (st == LBK_OK && !image.has_tree)
        st = lbk_saved_write(dir, rank_name(key, sizeof key, r, "points"),
                             d->dtype == LBK_DTYPE_FLOAT32 ? (const void *)d->points : d->raw,
                             n * dim * lbk_dataset_type_bytes(d->dtype), lines, size, used);
    /* The tree's points at the width it holds them (the shard's type). */
    if (st == LBK_OK && image.has_tree) {
        st = line(lines, size, used, rank_name(key, sizeof key, r, "tree_sort"),
                  (uint64_t)image.tree.sort_used);
        if (st == LBK_OK)
            st = lbk_saved_write(
                dir, rank_name(key, sizeof key, r, "tree_points"), image.tree.points,
                n * dim * lbk_dataset_type_bytes(image.tree.dtype), lines, size, used);
        if (st == LBK_OK)
            st = lbk_saved_write(dir, rank_name(key, sizeof key, r, "tree_ids"), image.tree.ids,
                                 n * 4, lines, size, used);
        if (st == LBK_OK && image.tree.split_dims)
            st = lbk_saved_write(dir, rank_name(key, sizeof key, r, "tree_dims"),
                                 image.tree.split_dims, n, lines, size, used);
    }
    lbk_engine_image_free(&image);
    if (st == LBK_OK && s->spatial && r == 0)
        st = save_top(&s->spatial->tree, dir, lines, size, used);
    return st;
}

/* The most ranks a manifest may name: far above any run, so that a
 * corrupted count is refused before anything is sized by it. */
#define SAVED_RANKS_MAX (1 << 24)

/* Room for one rank's manifest lines (a dozen lines of under 80 bytes). */
#define RANK_LINES 4096
#define HEADER_LINES 8192

/* What the index was made for: the items lbk_index_saved_fits checks, and
 * the shape a load takes from it. Float32 points keep format 1's layout
 * (an older lbknn loads them); compact ones are format 2. */
static lbk_status header(const lbk_index *s, const lbk_index_save_extra *extra, char *buf,
                         size_t size, size_t *used)
{
    const lbk_dtype type = s->shard.dtype;
    const int w = snprintf(
        buf, size,
        "# lbknn saved index (docs/design.md, \"A saved index\")\n"
        "format = %d\nranks = %d\nmetric = %s\nsplit = %s\nengine = %s\npartition = %s\n"
        "type = %s\ndim = %d\nreference_rows = %" PRIu64 "\nreference_labels = %d\n"
        "reference_targets = %d\nreference = %s\n",
        type == LBK_DTYPE_FLOAT32 ? LBK_INDEX_SAVED_FORMAT_FLOAT32 : LBK_INDEX_SAVED_FORMAT,
        s->comm->size, lbk_metric_name(s->params.metric), lbk_tree_split_name(s->params.split),
        lbk_engine_name(s->plan.engine), lbk_partition_name(s->plan.partition),
        lbk_dtype_name(type), s->shape.dim, s->shape.reference_rows, s->shape.reference_labels,
        extra->targets_saved, extra->reference);
    LBK_FAIL_IF(w < 0 || (size_t)w >= size, LBK_ERR_INTERNAL,
                "internal: manifest header overflow");
    *used = (size_t)w;
    return LBK_OK;
}

static lbk_status save_targets(const lbk_index *s, const lbk_index_save_extra *extra,
                               const char *dir, char *lines, size_t *used)
{
    if (!extra->targets_saved)
        return LBK_OK;
    const int r = s->comm->rank;
    char name[64];
    const int w = snprintf(lines + *used, RANK_LINES - *used,
                           "r%d.targets_first = %" PRIu64 "\nr%d.targets_rows = %" PRIu64 "\n", r,
                           extra->targets_first, r, extra->targets_rows);
    LBK_FAIL_IF(w < 0 || (size_t)w >= RANK_LINES - *used, LBK_ERR_INTERNAL,
                "internal: manifest lines overflow");
    *used += (size_t)w;
    snprintf(name, sizeof name, "r%d.targets", r);
    return lbk_saved_write(dir, name, extra->targets, extra->targets_rows * sizeof(double), lines,
                           RANK_LINES, used);
}

/* Rank 0: the old manifest goes first, so that an interrupted save leaves
 * no index that claims the new files. */
static lbk_status clear_dir(const char *dir)
{
    LBK_TRY(lbk_saved_make_dir(dir));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, LBK_SAVED_MANIFEST);
    remove(path);
    return LBK_OK;
}

static lbk_status write_manifest(const lbk_index *s, const lbk_index_save_extra *extra,
                                 const char *dir, const char *all)
{
    char *text = malloc(HEADER_LINES + (size_t)s->comm->size * RANK_LINES);
    LBK_FAIL_IF(!text, LBK_ERR_NOMEM, "out of host memory for the manifest");
    size_t used = 0;
    lbk_status st = header(s, extra, text, HEADER_LINES, &used);
    for (int r = 0; st == LBK_OK && r < s->comm->size; r++) {
        const char *mine = all + (size_t)r * RANK_LINES;
        const size_t len = strnlen(mine, RANK_LINES);
        memcpy(text + used, mine, len);
        used += len;
    }
    if (st == LBK_OK)
        st = lbk_saved_manifest_write(dir, text, used);
    free(text);
    return st;
}

lbk_status lbk_index_save(const lbk_index *s, const char *dir, const lbk_index_save_extra *extra)
{
    LBK_TRY(lbk_comm_agree(s->comm, s->root ? clear_dir(dir) : LBK_OK));
    char lines[RANK_LINES] = {0};
    size_t used = 0;
    lbk_status st = save_rank(s, dir, lines, sizeof lines, &used);
    if (st == LBK_OK)
        st = save_targets(s, extra, dir, lines, &used);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    char *all = calloc((size_t)s->comm->size, RANK_LINES);
    if (!all)
        lbk_error("out of host memory for the manifest");
    st = lbk_comm_agree(s->comm, all ? LBK_OK : LBK_ERR_NOMEM);
    if (st == LBK_OK)
        st = lbk_comm_allgather_bytes(s->comm, lines, all, RANK_LINES);
    if (st == LBK_OK)
        st = lbk_comm_agree(s->comm, s->root ? write_manifest(s, extra, dir, all) : LBK_OK);
    free(all);
    return st;
}

/* One item the manifest and this run must agree on: false (and the
 * mismatch said once) where they do not. */
static bool agrees(const char *dir, bool rebuild, const char *manifest, const char *key,
                   const char *want)
{
    char have[256];
    const bool found = lbk_saved_get(manifest, key, have, sizeof have);
    if (found && strcmp(have, want) == 0)
        return true;
    if (rebuild)
        lbk_info("index.path: %s was saved for %s = %s, this run has %s: rebuilding it", dir, key,
                 found ? have : "(none)", want);
    else
        lbk_error("index.path: %s was saved for %s = %s, this run has %s (run lbknn build "
                  "again, or set index.rebuild: true)",
                  dir, key, found ? have : "(none)", want);
    return false;
}

bool lbk_index_saved_fits(const char *manifest, const char *dir, const lbk_index_params *params,
                          bool rebuild)
{
    /* Format 1 (float32 points) and the compact format 2 both load. */
    char have[64] = "", want[64];
    snprintf(want, sizeof want, "%d", LBK_INDEX_SAVED_FORMAT_FLOAT32);
    if (lbk_saved_get(manifest, "format", have, sizeof have) && strcmp(have, want) != 0)
        snprintf(want, sizeof want, "%d", LBK_INDEX_SAVED_FORMAT);
    if (strcmp(have, want) != 0)
        snprintf(want, sizeof want, "%d or %d", LBK_INDEX_SAVED_FORMAT_FLOAT32,
                 LBK_INDEX_SAVED_FORMAT);
    if (!agrees(dir, rebuild, manifest, "format", want))
        return false;
    if (!agrees(dir, rebuild, manifest, "metric", lbk_metric_name(params->metric)) ||
        !agrees(dir, rebuild, manifest, "split", lbk_tree_split_name(params->split)))
        return false;
    /* The engine and the partition these options give where the index was
     * built: mpi.partition: auto is spatial for a tree on 3 ranks and shard
     * on 1, and either loads on the other rank count. */
    uint64_t rows = 0, dim = 0, ranks = 0;
    lbk_saved_get_u64(manifest, "reference_rows", &rows);
    lbk_saved_get_u64(manifest, "dim", &dim);
    if (!lbk_saved_get_u64(manifest, "ranks", &ranks) || ranks < 1 || ranks > SAVED_RANKS_MAX) {
        lbk_error("index.path: %s/%s: no valid line ranks", dir, LBK_SAVED_MANIFEST);
        return false;
    }
    lbk_index_plan plan;
    lbk_index_plan_make(params, (int)dim, rows, (int)ranks, &plan);
    return agrees(dir, rebuild, manifest, "engine", lbk_engine_name(plan.engine)) &&
           agrees(dir, rebuild, manifest, "partition", lbk_partition_name(plan.partition));
}

lbk_status lbk_index_saved_shape(const char *manifest, const char *dir, uint64_t *rows, int *dim,
                                 bool *labels, bool *targets)
{
    uint64_t d = 0, l = 0, t = 0;
    LBK_FAIL_IF(!lbk_saved_get_u64(manifest, "reference_rows", rows) ||
                    !lbk_saved_get_u64(manifest, "dim", &d) || d == 0 || d > 4096 ||
                    !lbk_saved_get_u64(manifest, "reference_labels", &l) ||
                    !lbk_saved_get_u64(manifest, "reference_targets", &t),
                LBK_ERR_INPUT, "%s/%s: saved index: a shape line is missing or invalid", dir,
                LBK_SAVED_MANIFEST);
    *dim = (int)d;
    *labels = l != 0;
    *targets = t != 0;
    return LBK_OK;
}

lbk_status lbk_index_saved_type(const char *manifest, const char *dir, lbk_dtype *type)
{
    char format[64] = "", name[64] = "";
    lbk_saved_get(manifest, "format", format, sizeof format);
    const bool named = lbk_saved_get(manifest, "type", name, sizeof name);
    /* Format 1, written before compact points, has no type line. */
    *type = LBK_DTYPE_FLOAT32;
    if (!named && strcmp(format, "1") == 0)
        return LBK_OK;
    const bool known = lbk_dtype_parse(name, type) && *type != LBK_DTYPE_AUTO;
    LBK_FAIL_IF(!known || (*type != LBK_DTYPE_FLOAT32 && strcmp(format, "1") == 0), LBK_ERR_INPUT,
                "%s/%s: saved index: no valid line type (format %s)", dir, LBK_SAVED_MANIFEST,
                format);
    return LBK_OK;
}

bool lbk_index_saved_type_fits(const char *manifest, const char *dir, lbk_dtype asked,
                               bool rebuild)
{
    lbk_dtype saved = LBK_DTYPE_FLOAT32;
    if (lbk_index_saved_type(manifest, dir, &saved) != LBK_OK)
        return false;
    if (asked == LBK_DTYPE_AUTO || asked == saved)
        return true;
    if (rebuild)
        lbk_info("index.path: %s holds %s points, this run has reference.type %s: rebuilding it",
                 dir, lbk_dtype_name(saved), lbk_dtype_name(asked));
    else
        lbk_error("index.path: %s holds %s points, this run has reference.type %s (give "
                  "reference.type: auto or %s, run lbknn build again, or set index.rebuild: "
                  "true)",
                  dir, lbk_dtype_name(saved), lbk_dtype_name(asked), lbk_dtype_name(saved));
    return false;
}

lbk_status lbk_index_manifest_share(const lbk_comm *comm, const char *dir, char **text)
{
    *text = NULL;
    lbk_status st = comm->rank == 0 ? lbk_saved_manifest_read(dir, text) : LBK_OK;
    LBK_TRY(lbk_comm_agree(comm, st));
    uint64_t len = comm->rank == 0 ? strlen(*text) : 0;
    LBK_TRY(lbk_comm_bcast_bytes(comm, &len, sizeof len));
    if (comm->rank != 0)
        *text = calloc(1, (size_t)len + 1);
    if (!*text)
        lbk_error("out of host memory for the saved index's manifest");
    LBK_TRY(lbk_comm_agree(comm, *text ? LBK_OK : LBK_ERR_NOMEM));
    return lbk_comm_bcast_bytes(comm, *text, len);
}

/* This rank's targets: those of the input rows it held when the index was
 * saved. */
static lbk_status read_targets(const char *dir, const char *m, int r, lbk_index_saved *saved)
{
    LBK_TRY(lbk_index_part_u64(dir, m, r, "targets_first", &saved->targets_first));
    LBK_TRY(lbk_index_part_u64(dir, m, r, "targets_rows", &saved->targets_rows));
    lbk_status st = LBK_OK;
    saved->targets =
        lbk_alloc_large_logged(saved->targets_rows, sizeof(double), "saved targets", &st);
    LBK_TRY(st);
    return lbk_index_part_read(dir, m, r, "targets", saved->targets,
                               saved->targets_rows * sizeof(double));
}

double *lbk_index_saved_take_targets(lbk_index_saved *saved, uint64_t *first, uint64_t *rows)
{
    double *t = saved->targets;
    *first = saved->targets_first;
    *rows = saved->targets_rows;
    saved->targets = NULL;
    return t;
}

static lbk_status read_top(const char *dir, const char *manifest, int ranks, int dim,
                           uint64_t points, lbk_toptree *t)
{
    uint64_t node_bytes = 0;
    LBK_FAIL_IF(!lbk_saved_get_u64(manifest, "toptree.node_bytes", &node_bytes) ||
                    node_bytes != sizeof *t->nodes,
                LBK_ERR_INPUT, "%s: saved index: its top tree was written by another build", dir);
    LBK_TRY(lbk_toptree_shape(t, ranks, dim, points));
    const uint64_t boxes = (uint64_t)ranks * (uint64_t)dim * sizeof(float);
    LBK_TRY(lbk_saved_read(dir, "toptree.nodes", manifest, t->nodes,
                           (uint64_t)t->count * sizeof *t->nodes));
    LBK_TRY(lbk_saved_read(dir, "toptree.owned", manifest, t->owned, (uint64_t)ranks * 8));
    LBK_TRY(lbk_saved_read(dir, "toptree.lo", manifest, t->lo, boxes));
    LBK_TRY(lbk_saved_read(dir, "toptree.hi", manifest, t->hi, boxes));
    lbk_toptree_set_node_boxes(t);
    return LBK_OK;
}

lbk_status lbk_index_part_u64(const char *dir, const char *manifest, int r, const char *what,
                              uint64_t *v)
{
    char key[64];
    LBK_FAIL_IF(!lbk_saved_get_u64(manifest, rank_name(key, sizeof key, r, what), v),
                LBK_ERR_INPUT, "%s/%s: saved index: no valid %s", dir, LBK_SAVED_MANIFEST, key);
    return LBK_OK;
}

lbk_status lbk_index_part_read(const char *dir, const char *manifest, int r, const char *what,
                               void *data, uint64_t bytes)
{
    char name[64];
    return lbk_saved_read(dir, rank_name(name, sizeof name, r, what), manifest, data, bytes);
}

lbk_status lbk_index_part_tree_rows(const char *dir, const char *manifest, int r, uint64_t n,
                                    uint32_t *rows)
{
    LBK_TRY(lbk_index_part_read(dir, manifest, r, "tree_ids", rows, n * 4));
    for (uint64_t i = 0; i < n; i++)
        LBK_FAIL_IF(rows[i] >= n, LBK_ERR_INPUT,
                    "%s/r%d.tree_ids: saved index: node %" PRIu64 " names row %" PRIu32
                    " of %" PRIu64,
                    dir, r, i, rows[i], n);
    return LBK_OK;
}

/* The shard's ids and labels; its points are left to the engine's part. */
static lbk_status read_rows(const char *dir, const char *manifest, int r, bool labels,
                            lbk_dataset *d)
{
    uint64_t bits = 0;
    LBK_TRY(lbk_index_part_u64(dir, manifest, r, "rows", &d->rows));
    LBK_TRY(lbk_index_part_u64(dir, manifest, r, "first_row", &d->first_row));
    LBK_TRY(lbk_index_part_u64(dir, manifest, r, "id_bits", &bits));
    LBK_FAIL_IF(bits != 0 && bits != 32 && bits != 64, LBK_ERR_INPUT,
                "%s: saved index: r%d.id_bits is %" PRIu64, dir, r, bits);
    lbk_status st = LBK_OK;
    const uint64_t n = d->rows;
    void *points = lbk_alloc_large_logged(n * (uint64_t)d->dim + 1,
                                          lbk_dataset_type_bytes(d->dtype), "saved points", &st);
    if (d->dtype == LBK_DTYPE_FLOAT32)
        d->points = points;
    else
        d->raw = points;
    if (st == LBK_OK && bits == 32)
        d->ids32 = lbk_alloc_large_logged(n, 4, "saved ids", &st);
    if (st == LBK_OK && bits == 64)
        d->ids = lbk_alloc_large_logged(n, 8, "saved ids", &st);
    if (st == LBK_OK && labels)
        d->labels = lbk_alloc_large_logged(n, 4, "saved labels", &st);
    LBK_TRY(st);
    if (bits)
        LBK_TRY(lbk_index_part_read(dir, manifest, r, "ids",
                                    bits == 32 ? (void *)d->ids32 : (void *)d->ids,
                                    n * bits / 8));
    if (labels)
        LBK_TRY(lbk_index_part_read(dir, manifest, r, "labels", d->labels, n * 4));
    return LBK_OK;
}

/* The tree's arrays, and the shard's rows put back from them: node i is
 * shard row tree.ids[i]. */
static lbk_status read_tree(const char *dir, const char *manifest, int r, bool widest,
                            lbk_dataset *d, lbk_kdtree_image *t)
{
    uint64_t sort = 0;
    const uint64_t n = d->rows, row = (uint64_t)d->dim * lbk_dataset_type_bytes(d->dtype);
    LBK_TRY(lbk_index_part_u64(dir, manifest, r, "tree_sort", &sort));
    t->n = n;
    t->dim = d->dim;
    t->dtype = d->dtype;
    t->sort_used = (lbk_tree_sort)sort;
    t->points = malloc(n * row + 1);
    t->ids = malloc(n * 4 + 1);
    t->split_dims = widest ? malloc(n + 1) : NULL;
    LBK_FAIL_IF(!t->points || !t->ids || (widest && !t->split_dims), LBK_ERR_NOMEM,
                "out of host memory for a saved k-d tree of %" PRIu64 " points", n);
    LBK_TRY(lbk_index_part_read(dir, manifest, r, "tree_points", t->points, n * row));
    LBK_TRY(lbk_index_part_tree_rows(dir, manifest, r, n, t->ids));
    if (widest)
        LBK_TRY(lbk_index_part_read(dir, manifest, r, "tree_dims", t->split_dims, n));
    unsigned char *rows = d->dtype == LBK_DTYPE_FLOAT32 ? (void *)d->points : d->raw;
    const unsigned char *tree = t->points;
    for (uint64_t i = 0; i < n; i++)
        memcpy(rows + (uint64_t)t->ids[i] * row, tree + i * row, row);
    return LBK_OK;
}

/* Part r as the index held it: read back whole, with the engine's image
 * and (spatial) the top tree, as on the rank count that saved it. */
static lbk_status read_part(const char *dir, const char *manifest, int r, int parts,
                            const lbk_index_params *params, const lbk_index_plan *plan,
                            uint64_t reference_rows, bool labels, bool targets,
                            lbk_dataset *shard, lbk_index_saved *saved)
{
    LBK_TRY(read_rows(dir, manifest, r, labels, shard));
    if (plan->engine == LBK_ENGINE_KDTREE) {
        saved->engine.has_tree = true;
        LBK_TRY(read_tree(dir, manifest, r, params->split == LBK_SPLIT_WIDEST, shard,
                          &saved->engine.tree));
    } else {
        LBK_TRY(lbk_index_part_read(
            dir, manifest, r, "points",
            shard->dtype == LBK_DTYPE_FLOAT32 ? (void *)shard->points : shard->raw,
            shard->rows * (uint64_t)shard->dim * lbk_dataset_type_bytes(shard->dtype)));
    }
    if (plan->partition == LBK_PARTITION_SPATIAL) {
        saved->has_top = true;
        LBK_TRY(read_top(dir, manifest, parts, shard->dim, reference_rows, &saved->top));
    }
    return targets ? read_targets(dir, manifest, r, saved) : LBK_OK;
}

lbk_status lbk_index_saved_read(const char *dir, const char *manifest, const lbk_comm *comm,
                                const lbk_index_params *params, const lbk_index_plan *plan,
                                int dim, uint64_t reference_rows, bool labels, bool targets,
                                lbk_dataset *shard, lbk_index_saved **out)
{
    *shard = (lbk_dataset){.dim = dim};
    lbk_index_saved *saved = calloc(1, sizeof *saved);
    *out = saved;
    lbk_status st = saved ? LBK_OK : LBK_ERR_NOMEM;
    if (!saved)
        lbk_error("out of host memory for a saved index");
    lbk_dtype type = LBK_DTYPE_FLOAT32;
    if (st == LBK_OK)
        st = lbk_index_saved_type(manifest, dir, &type);
    shard->dtype = type;
    uint64_t parts = 0;
    if (!lbk_saved_get_u64(manifest, "ranks", &parts) || parts < 1 || parts > SAVED_RANKS_MAX) {
        lbk_error("%s/%s: saved index: no valid line ranks", dir, LBK_SAVED_MANIFEST);
        st = LBK_ERR_INPUT;
    }
    /* The same rank count, or replicas (each part holds every row, and
     * its tree is the one a build on any rank count makes): the parts as
     * saved, nothing built again. */
    if (parts == (uint64_t)comm->size || (parts && plan->replicated))
        return st != LBK_OK
                   ? st
                   : read_part(dir, manifest, comm->rank % (int)parts, (int)parts, params, plan,
                               reference_rows, labels, targets, shard, saved);
    st = lbk_index_reshape_read(st, dir, manifest, comm, (int)parts,
                                plan->engine == LBK_ENGINE_KDTREE, dim, type, reference_rows,
                                labels, shard, targets && saved ? &saved->targets : NULL,
                                saved ? &saved->targets_first : NULL);
    if (st == LBK_OK) {
        saved->rebuild = true;
        saved->targets_rows = targets ? shard->rows : 0;
    }
    return st;
}

void lbk_index_saved_free(lbk_index_saved *saved)
{
    if (!saved)
        return;
    lbk_engine_image_free(&saved->engine);
    lbk_toptree_free(&saved->top);
    lbk_alloc_large_free(saved->targets);
    free(saved);
}

lbk_status lbk_index_create_saved(const lbk_comm *comm, lbk_device *device,
                                  const lbk_tuning *tuning, const lbk_index_params *params,
                                  const lbk_index_plan *plan, uint64_t reference_rows,
                                  bool reference_labels, lbk_dataset *shard,
                                  const lbk_dataset *queries, lbk_index_saved *saved,
                                  lbk_index **out)
{
    if (saved->rebuild)
        return lbk_index_create(comm, device, tuning, params, plan, reference_rows,
                                reference_labels, shard, queries, out);
    lbk_index *s = NULL;
    LBK_TRY(lbk_index_create_empty(comm, device, params, plan, reference_rows, reference_labels,
                                   shard, &s));
    *out = s;
    if (saved->has_top)
        LBK_TRY(lbk_comm_agree(comm, lbk_batch_spatial_adopt(s, &saved->top)));
    const double t = lbk_timer_now();
    lbk_engine_params engine;
    lbk_engine_params_from_index(params, tuning, &engine);
    engine.rotation = lbk_batch_spatial_rotation(s);
    const lbk_status st = lbk_engine_create_from(device, &engine, plan->engine, &s->shard,
                                                 &saved->engine, &s->engine);
    s->info.phase[LBK_PHASE_BUILD] += lbk_timer_now() - t;
    s->info.stats.points = s->shard.rows;
    return lbk_comm_agree(comm, st);
}

lbk_dtype lbk_index_points_type(const lbk_index *s) { return s->shard.dtype; }
