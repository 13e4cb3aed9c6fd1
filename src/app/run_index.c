#include "run_index.h"

#include "log.h"
#include "normalize.h"
#include "saved.h"
#include "timer.h"
#include "try.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The reference side of the shape as saved, the query side probed. */
static lbk_status saved_shape(lbk_run_state *s, const char *m)
{
    uint64_t rows = 0;
    int dim = 0;
    bool labels = false, targets = false;
    lbk_dtype type = LBK_DTYPE_FLOAT32;
    LBK_TRY(lbk_index_saved_shape(m, s->job->index.path, &rows, &dim, &labels, &targets));
    LBK_TRY(lbk_index_saved_type(m, s->job->index.path, &type));
    LBK_TRY(lbk_inputs_probe_queries(s->job, rows, dim, &s->shape));
    s->shape.reference_type = type;
    s->shape.reference_labels = labels && s->job->task == LBK_TASK_CLASSIFY;
    s->shape.reference_targets = targets && s->job->task == LBK_TASK_REGRESS;
    return LBK_OK;
}

/* Loading on another rank count costs more than on the saved one: say so. */
static void say_ranks(const lbk_run_state *s, const char *m)
{
    uint64_t ranks = 0;
    if (!lbk_saved_get_u64(m, "ranks", &ranks) || ranks == (uint64_t)s->comm->size)
        return;
    lbk_index_plan plan;
    lbk_index_plan_make(&s->index_params, s->shape.dim, s->shape.reference_rows, s->comm->size,
                        &plan);
    lbk_info("index.path: %s was saved on %" PRIu64 " rank(s), this run has %d: %s",
             s->job->index.path, ranks, s->comm->size,
             plan.replicated ? "each rank loads a replica as saved"
                             : "the saved points are regrouped into this run's shards and "
                               "built again (the reference file is not read)");
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
    LBK_TRY(lbk_saved_manifest_read(job->index.path, &m));
    if (!lbk_index_saved_fits(m, job->index.path, &s->index_params, job->index.rebuild) ||
        !lbk_index_saved_type_fits(m, job->index.path, job->reference.type, job->index.rebuild)) {
        free(m);
        return job->index.rebuild ? lbk_inputs_probe(job, &s->shape) : LBK_ERR_CONFIG;
    }
    s->index_mode = LBK_RUN_INDEX_LOAD;
    const lbk_status st = saved_shape(s, m);
    if (st == LBK_OK)
        say_ranks(s, m);
    free(m); /* lbk_run_index_share gives every rank its copy */
    return st;
}

lbk_status lbk_run_index_share(lbk_run_state *s)
{
    LBK_TRY(lbk_comm_bcast_bytes(s->comm, &s->index_mode, sizeof s->index_mode));
    if (s->index_mode != LBK_RUN_INDEX_LOAD)
        return LBK_OK;
    return lbk_index_manifest_share(s->comm, s->job->index.path, &s->index_manifest);
}

lbk_status lbk_run_index_read(lbk_run_state *s)
{
    const bool targets = s->job->task == LBK_TASK_REGRESS;
    LBK_TRY(lbk_index_saved_read(s->job->index.path, s->index_manifest, s->comm, &s->index_params,
                                 &s->plan, s->shape.dim, s->shape.reference_rows,
                                 s->shape.reference_labels, targets, &s->shard, &s->index_saved));
    /* A compact index loaded by a job that searches float32 (brute force's
     * radius search over an index a search saved): widened as a fresh run
     * of the job widens it, saying why. */
    const char *why = lbk_index_plan_compact_why(&s->plan, s->job->knn.metric, s->shard.dtype,
                                                 s->shard.dim, s->index_params.radius);
    if (why && s->root)
        lbk_info("%s reference points widened to float32: %s", lbk_dtype_name(s->shard.dtype),
                 why);
    if (why) {
        LBK_TRY(lbk_dataset_widen(&s->shard));
        if (s->job->knn.metric == LBK_METRIC_COSINE) /* as read_rows normalises float32 rows */
            lbk_normalize_rows(s->shard.points, s->shard.rows, s->shard.dim);
    }
    if (targets)
        s->targets =
            lbk_index_saved_take_targets(s->index_saved, &s->targets_first, &s->targets_rows);
    return LBK_OK;
}

lbk_status lbk_run_index_save(lbk_run_state *s)
{
    if (s->index_mode != LBK_RUN_INDEX_SAVE)
        return LBK_OK;
    const double t = lbk_timer_now();
    const lbk_index_save_extra extra = {
        .reference = lbk_inputs_name(s->job, false),
        .targets_saved = s->job->task == LBK_TASK_REGRESS,
        .targets = s->targets,
        .targets_first = s->targets_first,
        .targets_rows = s->targets_rows,
    };
    LBK_TRY(lbk_index_save(s->index, s->job->index.path, &extra));
    if (s->root)
        lbk_info("index saved to %s: %" PRIu64 " points, %d rank(s), %s, %.3f s",
                 s->job->index.path, s->shape.reference_rows, s->comm->size,
                 lbk_engine_name(s->plan.engine), lbk_timer_now() - t);
    return LBK_OK;
}

void lbk_run_index_free(lbk_run_state *s)
{
    free(s->index_manifest);
    s->index_manifest = NULL;
    lbk_index_saved_free(s->index_saved);
    s->index_saved = NULL;
}
