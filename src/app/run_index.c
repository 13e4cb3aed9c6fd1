#include "run_index.h"

#include "alloc_large.h"
#include "log.h"
#include "saved_files.h"
#include "timer.h"
#include "try.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Room for one rank's manifest lines (a dozen lines of under 80 bytes). */
#define RANK_LINES 4096
#define HEADER_LINES 8192

/* The items a saved index is made for, as the manifest writes them: the
 * format, the rank count and what decides the files' content. */
static lbk_status header(const lbk_run_state *s, char *buf, size_t size, size_t *used)
{
    const lbk_job *job = s->job;
    const int w = snprintf(
        buf, size,
        "# lbknn saved index (docs/design.md, \"A saved index\")\n"
        "format = %d\nranks = %d\nmetric = %s\nsplit = %s\nengine = %s\npartition = %s\n"
        "dim = %d\nreference_rows = %" PRIu64 "\nreference_labels = %d\n"
        "reference_targets = %d\nreference = %s\n",
        LBK_RUN_INDEX_FORMAT, s->comm->size, lbk_metric_name(job->knn.metric),
        lbk_tree_split_name(job->tree.split), lbk_engine_name(s->plan.engine),
        lbk_partition_name(s->plan.partition), s->shape.dim, s->shape.reference_rows,
        s->shape.reference_labels, s->job->task == LBK_TASK_REGRESS, lbk_inputs_name(job, false));
    LBK_FAIL_IF(w < 0 || (size_t)w >= size, LBK_ERR_INTERNAL,
                "internal: manifest header overflow");
    *used = (size_t)w;
    return LBK_OK;
}

/* One item the manifest and this run must agree on: false (and the
 * mismatch said once) where they do not. */
static bool agrees(const lbk_job *job, const char *manifest, const char *key, const char *want)
{
    char have[256];
    if (lbk_saved_get(manifest, key, have, sizeof have) && strcmp(have, want) == 0)
        return true;
    const char *dir = job->index.path;
    if (job->index.rebuild)
        lbk_info("index.path: %s was saved for %s = %s, this run has %s: rebuilding it", dir, key,
                 have, want);
    else
        lbk_error("index.path: %s was saved for %s = %s, this run has %s (run lbknn build "
                  "again, or set index.rebuild: true)",
                  dir, key, lbk_saved_get(manifest, key, have, sizeof have) ? have : "(none)",
                  want);
    return false;
}

/* Every item, in the order a mismatch is reported; the engine and the
 * partition as the plan resolves them for the saved shape. The dimension
 * is the queries' to match (lbk_inputs_probe_queries). */
static bool matches(lbk_run_state *s, const char *m, uint64_t rows, int dim)
{
    const lbk_job *job = s->job;
    char want[64];
    snprintf(want, sizeof want, "%d", LBK_RUN_INDEX_FORMAT);
    if (!agrees(job, m, "format", want))
        return false;
    snprintf(want, sizeof want, "%d", s->comm->size);
    if (!agrees(job, m, "ranks", want) ||
        !agrees(job, m, "metric", lbk_metric_name(job->knn.metric)) ||
        !agrees(job, m, "split", lbk_tree_split_name(job->tree.split)))
        return false;
    lbk_index_plan plan;
    lbk_index_plan_make(job, dim, rows, s->comm->size, &plan);
    return agrees(job, m, "engine", lbk_engine_name(plan.engine)) &&
           agrees(job, m, "partition", lbk_partition_name(plan.partition));
}

/* The reference side of the shape as saved, the query side probed. */
static lbk_status saved_shape(lbk_run_state *s, const char *m)
{
    const char *dir = s->job->index.path;
    uint64_t rows = 0, dim = 0, labels = 0, targets = 0;
    LBK_FAIL_IF(!lbk_saved_get_u64(m, "reference_rows", &rows) ||
                    !lbk_saved_get_u64(m, "dim", &dim) || dim == 0 || dim > 4096 ||
                    !lbk_saved_get_u64(m, "reference_labels", &labels) ||
                    !lbk_saved_get_u64(m, "reference_targets", &targets),
                LBK_ERR_INPUT, "%s/%s: saved index: a shape line is missing or invalid", dir,
                LBK_SAVED_MANIFEST);
    LBK_TRY(lbk_inputs_probe_queries(s->job, rows, (int)dim, &s->shape));
    s->shape.reference_labels = labels && s->job->task == LBK_TASK_CLASSIFY;
    s->shape.reference_targets = targets && s->job->task == LBK_TASK_REGRESS;
    return LBK_OK;
}

lbk_status lbk_run_index_probe(lbk_run_state *s, bool build_only)
{
    const lbk_job *job = s->job;
    s->index_mode = job->index.path[0] ? LBK_RUN_INDEX_SAVE : LBK_RUN_INDEX_NONE;
    LBK_FAIL_IF(build_only && !job->index.path[0], LBK_ERR_CONFIG,
                "%s: lbknn build needs index.path, the directory to save the index to",
                job->source);
    if (build_only || !job->index.path[0])
        return lbk_inputs_probe(job, &s->shape);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", job->index.path, LBK_SAVED_MANIFEST);
    if (job->index.rebuild && access(path, F_OK) != 0) {
        lbk_info("index.path: %s holds no saved index: building it", job->index.path);
        return lbk_inputs_probe(job, &s->shape);
    }
    char *m = NULL;
    const lbk_status st = lbk_saved_manifest_read(job->index.path, &m);
    LBK_TRY(st);
    uint64_t rows = 0, dim = 0;
    lbk_saved_get_u64(m, "reference_rows", &rows);
    lbk_saved_get_u64(m, "dim", &dim);
    if (!matches(s, m, rows, (int)dim)) {
        free(m);
        return job->index.rebuild ? lbk_inputs_probe(job, &s->shape) : LBK_ERR_CONFIG;
    }
    s->index_mode = LBK_RUN_INDEX_LOAD;
    s->index_manifest = m;
    return saved_shape(s, m);
}

lbk_status lbk_run_index_share(lbk_run_state *s)
{
    LBK_TRY(lbk_comm_bcast_bytes(s->comm, &s->index_mode, sizeof s->index_mode));
    if (s->index_mode != LBK_RUN_INDEX_LOAD)
        return LBK_OK;
    uint64_t len = s->root ? strlen(s->index_manifest) : 0;
    LBK_TRY(lbk_comm_bcast_bytes(s->comm, &len, sizeof len));
    if (!s->root)
        s->index_manifest = calloc(1, (size_t)len + 1);
    const lbk_status st = s->index_manifest ? LBK_OK : LBK_ERR_NOMEM;
    if (st != LBK_OK)
        lbk_error("out of host memory for the saved index's manifest");
    LBK_TRY(lbk_comm_agree(s->comm, st));
    return lbk_comm_bcast_bytes(s->comm, s->index_manifest, len);
}

/* Task regress: the targets of the input rows this rank read when the
 * index was saved (they are looked up by global id, run_targets.c). */
static lbk_status read_targets(lbk_run_state *s)
{
    const char *dir = s->job->index.path, *m = s->index_manifest;
    char key[64], name[64];
    const int r = s->comm->rank;
    snprintf(key, sizeof key, "r%d.targets_first", r);
    snprintf(name, sizeof name, "r%d.targets_rows", r);
    LBK_FAIL_IF(!lbk_saved_get_u64(m, key, &s->targets_first) ||
                    !lbk_saved_get_u64(m, name, &s->targets_rows),
                LBK_ERR_INPUT, "%s/%s: saved index: no valid %s", dir, LBK_SAVED_MANIFEST, key);
    lbk_status st = LBK_OK;
    s->targets =
        lbk_alloc_large_logged(s->targets_rows, sizeof *s->targets, "saved targets", &st);
    LBK_TRY(st);
    snprintf(name, sizeof name, "r%d.targets", r);
    return lbk_saved_read(dir, name, m, s->targets, s->targets_rows * sizeof *s->targets);
}

lbk_status lbk_run_index_read(lbk_run_state *s)
{
    LBK_TRY(lbk_index_saved_read(s->job->index.path, s->index_manifest, s->comm, s->job, &s->plan,
                                 s->shape.dim, s->shape.reference_rows, s->shape.reference_labels,
                                 &s->shard, &s->index_saved));
    return s->job->task == LBK_TASK_REGRESS ? read_targets(s) : LBK_OK;
}

static lbk_status save_targets(lbk_run_state *s, char *lines, size_t *used)
{
    if (s->job->task != LBK_TASK_REGRESS)
        return LBK_OK;
    const int r = s->comm->rank;
    char name[64];
    const int w = snprintf(lines + *used, RANK_LINES - *used,
                           "r%d.targets_first = %" PRIu64 "\nr%d.targets_rows = %" PRIu64 "\n", r,
                           s->targets_first, r, s->targets_rows);
    LBK_FAIL_IF(w < 0 || (size_t)w >= RANK_LINES - *used, LBK_ERR_INTERNAL,
                "internal: manifest lines overflow");
    *used += (size_t)w;
    snprintf(name, sizeof name, "r%d.targets", r);
    return lbk_saved_write(s->job->index.path, name, s->targets,
                           s->targets_rows * sizeof *s->targets, lines, RANK_LINES, used);
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

static lbk_status write_manifest(lbk_run_state *s, const char *all)
{
    char *text = malloc(HEADER_LINES + (size_t)s->comm->size * RANK_LINES);
    LBK_FAIL_IF(!text, LBK_ERR_NOMEM, "out of host memory for the manifest");
    size_t used = 0;
    lbk_status st = header(s, text, HEADER_LINES, &used);
    for (int r = 0; st == LBK_OK && r < s->comm->size; r++) {
        const char *mine = all + (size_t)r * RANK_LINES;
        const size_t len = strnlen(mine, RANK_LINES);
        memcpy(text + used, mine, len);
        used += len;
    }
    if (st == LBK_OK)
        st = lbk_saved_manifest_write(s->job->index.path, text, used);
    free(text);
    return st;
}

lbk_status lbk_run_index_save(lbk_run_state *s)
{
    if (s->index_mode != LBK_RUN_INDEX_SAVE)
        return LBK_OK;
    const double t = lbk_timer_now();
    const char *dir = s->job->index.path;
    LBK_TRY(lbk_comm_agree(s->comm, s->root ? clear_dir(dir) : LBK_OK));
    char lines[RANK_LINES] = {0};
    size_t used = 0;
    lbk_status st = lbk_index_save(s->index, dir, lines, sizeof lines, &used);
    if (st == LBK_OK)
        st = save_targets(s, lines, &used);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    char *all = calloc((size_t)s->comm->size, RANK_LINES);
    st = all ? LBK_OK : LBK_ERR_NOMEM;
    if (!all)
        lbk_error("out of host memory for the manifest");
    st = lbk_comm_agree(s->comm, st);
    if (st == LBK_OK)
        st = lbk_comm_allgather_bytes(s->comm, lines, all, RANK_LINES);
    if (st == LBK_OK)
        st = lbk_comm_agree(s->comm, s->root ? write_manifest(s, all) : LBK_OK);
    free(all);
    if (st == LBK_OK && s->root)
        lbk_info("index saved to %s: %" PRIu64 " points, %d rank(s), %s, %.3f s", dir,
                 s->shape.reference_rows, s->comm->size, lbk_engine_name(s->plan.engine),
                 lbk_timer_now() - t);
    return st;
}

void lbk_run_index_free(lbk_run_state *s)
{
    free(s->index_manifest);
    s->index_manifest = NULL;
    lbk_index_saved_free(s->index_saved);
    s->index_saved = NULL;
}
