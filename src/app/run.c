#include "run.h"

#include "alloc_large.h"
#include "checkpoint.h"
#include "classes.h"
#include "comm_job.h"
#include "compact.h"
#include "device_request.h"
#include "device_tuning.h"
#include "index_params.h"
#include "log.h"
#include "progress.h"
#include "row_split.h"
#include "run_index.h"
#include "run_radius.h"
#include "run_state.h"
#include "timer.h"
#include "try.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Largest class count of a probabilities file: one column per class. */
#define PROBABILITIES_MAX_CLASSES 1000000
/* The probabilities of a slice are computed this many bytes of rows at a
 * time (at least one row), then printed: a batch's whole would be queries x
 * classes doubles. */
#define PROBABILITIES_BYTES ((uint64_t)1 << 20)
/* Each phase below does its rank's local work and returns its status;
 * lbk_run agrees on it before the next collective step. Phases that are
 * themselves collective (broadcasts, reductions) say so. */

/* Rank 0 probes the inputs and checks what needs no computing. The read
 * phase's clock starts here on every rank: probing is reading too. */
static lbk_status probe_inputs(lbk_run_state *s)
{
    s->t_read = lbk_timer_now();
    lbk_truth_init(s->job, &s->truth);
    if (!s->root)
        return LBK_OK;
    LBK_TRY(lbk_run_index_probe(s, s->options->build_only)); /* index.path: load it? */
    return lbk_inputs_check(s->job, &s->shape);
}

/* The engine and the partition, from the options and the input's shape:
 * the same answer on every rank, with no communication. */
static void resolve_plan(lbk_run_state *s)
{
    lbk_index_plan_make(&s->index_params, s->shape.dim, s->shape.reference_rows, s->comm->size,
                        &s->plan);
}

/* Task regress: the targets of the reference rows [lo, hi) this rank read
 * (they stay here, run_targets.c), and those of the queries it holds. */
static lbk_status read_targets(lbk_run_state *s, uint64_t lo, uint64_t hi)
{
    lbk_status st = LBK_OK;
    if (s->job->task != LBK_TASK_REGRESS)
        return LBK_OK;
    if (s->index_mode != LBK_RUN_INDEX_LOAD) { /* else read with the saved index */
        s->targets_first = lo;
        s->targets_rows = hi - lo;
        s->targets =
            lbk_alloc_large_logged(hi - lo, sizeof *s->targets, "reference targets", &st);
        if (st == LBK_OK)
            st = lbk_inputs_read_targets(s->job, false, lo, hi, s->targets);
    }
    const bool holds = (s->plan.owns_slice || s->root) && !s->options->build_only;
    if (st != LBK_OK || !s->shape.query_targets || !holds)
        return st;
    const uint64_t first = s->plan.owns_slice ? s->query_first : 0;
    s->query_targets =
        lbk_alloc_large_logged(s->queries.rows, sizeof *s->query_targets, "query targets", &st);
    if (st == LBK_OK)
        st = lbk_run_rows_read_targets(s, first, s->queries.rows, s->query_targets);
    return st;
}

/* Each rank reads its reference rows (a shard, or all of them when they are
 * replicated); rank 0 reads the queries, or each rank its own slice of them
 * where the strategy owns slices. */
static lbk_status read_inputs(lbk_run_state *s)
{
    const char *widen = lbk_compact_job_why(s->job, s->shape.reference_type);
    if (s->root && widen && s->shape.reference_type != LBK_DTYPE_FLOAT32 &&
        s->index_mode != LBK_RUN_INDEX_LOAD)
        lbk_info("%s reference points widened to float32: %s",
                 lbk_dtype_name(s->shape.reference_type), widen);
    uint64_t lo = 0, rows = s->shape.reference_rows;
    if (!s->plan.replicated)
        lbk_row_split_range(s->shape.reference_rows, s->comm->size, s->comm->rank, &lo, &rows);
    lbk_status st = s->index_mode == LBK_RUN_INDEX_LOAD
                        ? lbk_run_index_read(s)
                        : lbk_inputs_read_rows(s->job, false, lo, lo + rows, &s->shard);
    if ((lbk_job_self_search(s->job) && !s->graph_queries) || s->options->build_only) {
        /* The graph's queries are the reference points themselves. */
    } else if (st == LBK_OK && s->plan.owns_slice) {
        uint64_t count = 0;
        lbk_index_query_slice(s->todo_rows, s->comm, &s->query_first, &count);
        st = lbk_run_rows_read(s, s->query_first, count, &s->queries);
    } else if (st == LBK_OK && s->root) {
        st = lbk_run_rows_read(s, 0, s->todo_rows, &s->queries);
    }
    if (st == LBK_OK)
        st = read_targets(s, lo, lo + rows);
    s->phase[LBK_PHASE_READ] = lbk_timer_now() - s->t_read;
    return st;
}

/* Collective: the largest label anywhere sizes the confusion matrix, the
 * largest reference label the probabilities' columns. */
static lbk_status reduce_label_max(lbk_run_state *s)
{
    const int32_t ref_max = lbk_classes_max_label(s->shard.labels, s->shard.rows);
    const int32_t query_max = lbk_classes_max_label(s->queries.labels, s->queries.rows);
    s->label_max = query_max > ref_max ? query_max : ref_max;
    LBK_TRY(lbk_comm_allreduce_i32(s->comm, &s->label_max, LBK_REDUCE_MAX));
    return lbk_classes_count(s->comm, s->shard.labels, s->shard.rows, &s->classes);
}

/* This rank's device, and the tables the gathers below fill. */
static lbk_status open_device(lbk_run_state *s)
{
    const lbk_job *job = s->job;
    const lbk_device_request request = lbk_device_request_from_job(job, s->comm->local_rank);
    const double t = lbk_timer_now();
    sigset_t held;
    lbk_checkpoint_hold_signal(&held);
    lbk_status st = lbk_device_open(&request, &s->device);
    lbk_checkpoint_release_signal(job, &held);
    if (st == LBK_OK) {
        lbk_tune_use_cache_dir(s->device, s->options->tune_cache_dir);
        lbk_device_tuning_from_job(job, s->device, s->options->tune_cache_dir, &s->tuning,
                                   s->tuning_file, sizeof s->tuning_file);
    }
    s->phase[LBK_PHASE_DEVICE] = lbk_timer_now() - t;
    s->devices =
        lbk_alloc_large_logged((size_t)s->comm->size, sizeof *s->devices, "device names", &st);
    if (st == LBK_OK)
        s->rank_stats = lbk_alloc_large_logged((size_t)s->comm->size, sizeof *s->rank_stats,
                                               "per-rank statistics", &st);
    if (st == LBK_OK && s->root)
        s->rank_phases = lbk_alloc_large_logged((size_t)s->comm->size * LBK_PHASE_COUNT,
                                                sizeof(double), "per-rank timings", &st);
    return st;
}

/* Collective: every rank's device, and a CPU device's threads and why. */
static lbk_status gather_devices(lbk_run_state *s)
{
    lbk_report_rank_device mine;
    memset(&mine, 0, sizeof mine);
    lbk_device_label(s->device, s->comm->local_rank, mine.desc, sizeof mine.desc);
    if (!lbk_device_is_gpu(s->device)) {
        mine.cpu_threads = lbk_device_compute_units(s->device);
        mine.cpu_threads_source =
            s->job->device.threads != 0 ? LBK_CPU_THREADS_JOB : s->options->cpu_threads;
    }
    mine.tuning = s->tuning;
    snprintf(mine.tuning_file, sizeof mine.tuning_file, "%s", s->tuning_file);
    return lbk_comm_allgather_bytes(s->comm, &mine, s->devices, (int)sizeof mine);
}

/* Collective: the index over every rank's shard, which it takes (the
 * spatial partition moves the points to their owners here), and its
 * batches for the query file. */
static lbk_status build_index(lbk_run_state *s)
{
    const bool graph = s->job->task == LBK_TASK_GRAPH;
    /* mpi.balance: queries weighs the boxes by this run's queries (each
     * rank's slice, read already); a graph's queries are its points. */
    const bool balance = s->job->mpi.balance == LBK_BALANCE_QUERIES &&
                         !lbk_job_self_search(s->job) && !s->options->build_only &&
                         s->plan.owns_slice;
    const lbk_dataset *queries = balance ? &s->queries : NULL;
    if (s->index_mode == LBK_RUN_INDEX_LOAD) {
        /* Saved on another rank count, the shard is the one read here, and
         * this builds (and balances) as below. */
        const lbk_status st = lbk_index_create_saved(
            s->comm, s->device, &s->tuning, &s->index_params, &s->plan, s->shape.reference_rows,
            s->shape.reference_labels, &s->shard, queries, s->index_saved, &s->index);
        lbk_run_index_free(s); /* the image is on the device now */
        LBK_TRY(st);
    } else {
        LBK_TRY(lbk_index_create(s->comm, s->device, &s->tuning, &s->index_params, &s->plan,
                                 s->shape.reference_rows, s->shape.reference_labels, &s->shard,
                                 queries, &s->index));
    }
    LBK_TRY(lbk_run_index_save(s)); /* index.path: built here, saved */
    if (s->options->build_only)
        return LBK_OK;
    if (lbk_job_radius_task(s->job))
        return LBK_OK; /* lbk_index_radius prepares its own, without K-lists */
    if (graph && !s->graph_queries)
        return lbk_index_prepare_self(s->index, 0);
    return lbk_index_prepare(s->index, s->todo_rows, 0);
}

/* Collective, task graph: this rank's share of the graph's rows. */
static lbk_status init_graph(lbk_run_state *s)
{
    if (s->job->task != LBK_TASK_GRAPH)
        return LBK_OK;
    return lbk_run_graph_init(&s->graph, s->comm, s->job->knn.k, s->shape.reference_rows,
                              s->plan.sliced);
}

/* The probabilities of proba_queries queries at a time; where ranks own
 * slices, the slice's probability rows, kept until the end
 * (lbk_run_emit_finish). */
static lbk_status alloc_vote_buffers(lbk_run_state *s)
{
    lbk_status st = LBK_OK;
    const bool proba = s->job->output.probabilities[0] != '\0';
    if (!proba)
        return st;
    /* Every rank knows the class count; rank 0 alone says it is too large. */
    LBK_FAIL_IF(s->root && s->classes > PROBABILITIES_MAX_CLASSES, LBK_ERR_INPUT,
                "output.probabilities: reference labels go up to %d, more columns than the %d "
                "a probabilities file may have",
                s->classes - 1, PROBABILITIES_MAX_CLASSES);
    if (s->classes > PROBABILITIES_MAX_CLASSES)
        return LBK_OK;
    const uint64_t row = (uint64_t)(s->classes > 0 ? s->classes : 1) * sizeof *s->proba;
    s->proba_queries = PROBABILITIES_BYTES / row > 1 ? PROBABILITIES_BYTES / row : 1;
    s->proba = lbk_alloc_large_logged(s->proba_queries * row / sizeof *s->proba, sizeof *s->proba,
                                      "probabilities", &st);
    if (st == LBK_OK && s->plan.owns_slice && s->shape.reference_labels) {
        s->proba_rows = open_memstream(&s->proba_text, &s->proba_text_len);
        LBK_FAIL_IF(!s->proba_rows, LBK_ERR_NOMEM, "out of host memory for probabilities");
    }
    return st;
}

/* Task regress: the values, one batch's neighbour targets, the lookup's
 * counts and the ranks' true values of a batch they emit a slice of. */
static lbk_status alloc_regress_buffers(lbk_run_state *s, uint64_t batch)
{
    lbk_status st = LBK_OK;
    const bool owns = s->plan.owns_slice;
    s->values =
        lbk_alloc_large_logged(owns ? s->queries.rows : batch, sizeof *s->values, "values", &st);
    if (st == LBK_OK)
        s->neighbour_targets = lbk_alloc_large_logged(batch * (uint64_t)s->job->knn.k,
                                                      sizeof(double), "neighbour targets", &st);
    if (st == LBK_OK)
        st = lbk_run_targets_init(s);
    if (st == LBK_OK && s->shape.query_targets && s->plan.sliced && !s->root && !owns)
        s->batch_truth_values =
            lbk_alloc_large_logged(batch, sizeof(double), "query targets", &st);
    return st;
}

static lbk_status alloc_batch_buffers(lbk_run_state *s)
{
    const uint64_t batch = lbk_index_info_of(s->index)->batch;
    const bool owns = s->plan.owns_slice;
    if (s->job->task == LBK_TASK_REGRESS)
        return alloc_regress_buffers(s, batch);
    const bool labels = s->shape.query_labels;
    lbk_status st = LBK_OK;
    s->predictions = lbk_alloc_large_logged(owns ? s->queries.rows : batch,
                                            sizeof *s->predictions, "predictions", &st);
    if (st == LBK_OK)
        st = alloc_vote_buffers(s);
    if (st == LBK_OK && labels && s->plan.sliced && !s->root && !owns)
        s->batch_truth =
            lbk_alloc_large_logged(batch, sizeof *s->batch_truth, "query labels", &st);
    if (st == LBK_OK && labels)
        st = lbk_classify_confusion_init(
            &s->confusion, s->label_max < LBK_RUN_CONFUSION_MAX_CLASSES ? s->label_max + 1 : 0);
    return st;
}

/* Whether ranks but 0 write into the result files: slices of each batch,
 * or a radius vote's probability rows, which any rank may have made. */
static bool writes_slices(const lbk_run_state *s)
{
    return s->plan.sliced || lbk_job_radius_votes(s->job);
}

/* Rank 0 with run.checkpoint: the kept partial files, opened at the
 * lengths lbk_checkpoint_restore found. */
static lbk_status open_kept_outputs(lbk_run_state *s)
{
    const lbk_outputs_shape shape = {
        s->shape.query_rows, s->classes, s->shape.reference_rows, {0}};
    const uint64_t text = s->outputs.text_offset, proba = s->outputs.proba_offset;
    const lbk_status st =
        lbk_outputs_open_kept(&s->outputs, s->job, &shape, s->kept_cut, s->kept_hdf5_offset);
    s->outputs_open = st == LBK_OK;
    s->outputs.text_offset = text;
    s->outputs.proba_offset = proba;
    return st;
}

/* Rank 0 creates the partial files (`create`); ranks that write slices of
 * each batch then open what it made, by the names it broadcast. */
static lbk_status open_outputs(lbk_run_state *s, bool create)
{
    if (s->checkpoint && create)
        return open_kept_outputs(s);
    const lbk_outputs_shape shape = {
        s->shape.query_rows, s->classes, s->shape.reference_rows, {0}};
    const bool shared = writes_slices(s) && s->comm->size > 1;
    const lbk_status st = lbk_outputs_open(&s->outputs, s->job, &shape, create, shared);
    s->outputs_open = st == LBK_OK;
    return st;
}

/* Task graph with run.checkpoint: searched as queries, the reference rows
 * not finished (a self search has no way to leave rows out; a query
 * search of a point with K + 1 finds the same list, itself dropped by id
 * as the self search does), whose global rows self_rows reads from an
 * order (one collective add per slice, whatever its gaps). */
static lbk_status graph_order(lbk_run_state *s)
{
    s->graph_queries = s->job->task == LBK_TASK_GRAPH;
    if (!s->graph_queries)
        return LBK_OK;
    LBK_FAIL_IF(s->shape.reference_rows >= UINT32_MAX, LBK_ERR_CONFIG,
                "%s: run.checkpoint with task graph: at most %u reference points", s->job->source,
                UINT32_MAX - 1);
    lbk_status st = LBK_OK;
    s->graph_order =
        lbk_alloc_large_logged(s->todo_rows, sizeof *s->graph_order, "the graph's rows", &st);
    for (uint64_t v = 0; st == LBK_OK && v < s->todo_rows;) {
        uint64_t run;
        const uint64_t g = lbk_run_rows_global(s, v, &run);
        for (uint64_t q = 0; q < run; q++)
            s->graph_order[v + q] = (uint32_t)(g + q);
        v += run;
    }
    return st;
}

/* Collective, before the plan: the query rows this run searches; with
 * run.checkpoint (which every task but the radius ones takes) and --resume,
 * those the checkpoint did not finish, and its partition for the plan. */
static lbk_status read_checkpoint(lbk_run_state *s)
{
    if (!s->checkpoint || s->options->build_only)
        return lbk_comm_agree(s->comm, lbk_run_rows_set(s, NULL, 0));
    LBK_TRY(lbk_checkpoint_read(s, s->options->resume));
    return lbk_comm_agree(s->comm, graph_order(s));
}

/* Collective, with run.checkpoint: the parts the checkpoint names (with
 * --resume) match on every rank, before any file is opened for writing. */
static lbk_status restore_checkpoint(lbk_run_state *s)
{
    if (!s->checkpoint)
        return LBK_OK;
    return lbk_checkpoint_restore(s, s->options->resume);
}

/* Collective where ranks write slices: the partial files' names, unique to
 * this run, are rank 0's. */
static lbk_status share_output_names(lbk_run_state *s)
{
    if (!writes_slices(s))
        return LBK_OK;
    return lbk_comm_bcast_bytes(s->comm, &s->outputs, sizeof s->outputs);
}

static void show_progress(void *run_state, uint64_t batch, uint64_t batches)
{
    lbk_run_state *s = run_state;
    uint64_t done = batch * lbk_index_info_of(s->index)->batch;
    /* A spatial graph's ranks search their own boxes: rank 0's batches
     * stand for a share of every point. */
    if (s->job->task == LBK_TASK_GRAPH)
        done = s->progress_total * batch / batches;
    lbk_progress_update(&s->progress, done < s->progress_total ? done : s->progress_total, batch,
                        batches);
}

/* Collective: every batch through the index, its final lists to
 * lbk_run_emit. */
static lbk_status run_batches(lbk_run_state *s)
{
    /* With owned slices, rank 0's progress stands for every rank's. */
    s->progress_total = s->plan.owns_slice ? s->queries.rows : s->todo_rows;
    /* Again: the OpenCL runtime, opened since, may have taken SIGUSR1. */
    lbk_checkpoint_handle_signal(s->job);
    lbk_progress_start(&s->progress, s->root && s->options->progress, s->progress_total);
    const bool graph = s->job->task == LBK_TASK_GRAPH;
    /* Task regress looks the neighbours' targets up on every rank. */
    const lbk_index_sink sink = {graph ? lbk_run_emit_graph : lbk_run_emit,
                                 show_progress,
                                 s,
                                 s->job->task == LBK_TASK_REGRESS,
                                 0, /* a resumed run searches only the rest */
                                 s->checkpoint ? lbk_checkpoint_after_batch : NULL};
    const lbk_status st = lbk_index_search(s->index, s->queries.points, &sink);
    lbk_progress_finish(&s->progress);
    return st;
}

static lbk_status close_outputs(lbk_run_state *s)
{
    return s->outputs_open ? lbk_outputs_close(&s->outputs) : LBK_OK;
}

/* This process's own peak resident size, in bytes: /proc/self/status's
 * VmHWM, which exec starts afresh. getrusage's ru_maxrss, the fallback where
 * /proc is missing (*from_proc false), keeps on Linux the largest peak of
 * the process before exec: a launcher's (a Python process holding 1.4 GB)
 * would be reported as lbknn's. */
static uint64_t peak_rss_bytes(bool *from_proc)
{
    *from_proc = false;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        unsigned long long kib = 0;
        while (!*from_proc && fgets(line, sizeof line, f))
            *from_proc = sscanf(line, "VmHWM: %llu kB", &kib) == 1;
        fclose(f);
        if (*from_proc)
            return (uint64_t)kib * 1024u;
    }
    struct rusage usage;
    /* Linux reports kilobytes. */
    return getrusage(RUSAGE_SELF, &usage) == 0 ? (uint64_t)usage.ru_maxrss * 1024u : 0;
}

/* Collective: every rank's work and peaks, and the spatial partition's
 * slowest redistribution and its bytes. */
static lbk_status gather_rank_stats(lbk_run_state *s)
{
    const lbk_index_info *info = lbk_index_info_of(s->index);
    s->stats = info->stats;
    bool from_proc;
    s->stats.peak_rss_bytes = peak_rss_bytes(&from_proc);
    s->stats.peak_rss_vmhwm = from_proc;
    s->stats.peak_device_bytes = lbk_index_peak_device_bytes(s->index);
    lbk_index_reference_bytes(s->index, &s->stats.reference_device_bytes,
                              &s->stats.reference_host_bytes);
    LBK_TRY(lbk_comm_allgather_bytes(s->comm, &s->stats, s->rank_stats, (int)sizeof s->stats));
    if (!info->spatial)
        return LBK_OK;
    lbk_report_spatial *r = &s->spatial;
    *r = *info->spatial;
    double lo, avg, hi;
    LBK_TRY(lbk_comm_reduce_stats(s->comm, &r->redistribute_s, 1, &lo, &avg, &hi));
    r->redistribute_s = hi;
    return lbk_comm_allreduce_u64(s->comm, &r->redistribute_bytes, LBK_REDUCE_SUM);
}

/* Collective: R^2 and MAE over every rank's queries, merged in rank order
 * (so a given rank count and partition always give the same bits; another
 * may differ in the last digits). */
static lbk_status reduce_score(lbk_run_state *s)
{
    lbk_status st = LBK_OK;
    lbk_regress_score *all =
        lbk_alloc_large_logged((uint64_t)s->comm->size, sizeof *all, "regression scores", &st);
    st = lbk_comm_agree(s->comm, st);
    if (st == LBK_OK)
        st = lbk_comm_allgather_bytes(s->comm, &s->score, all, (int)sizeof s->score);
    if (st == LBK_OK) {
        s->score = (lbk_regress_score){0};
        for (int r = 0; r < s->comm->size; r++)
            lbk_regress_score_merge(&s->score, &all[r]);
    }
    lbk_alloc_large_free(all);
    return st;
}

/* Collective: accuracy over every rank's slices, timings over ranks. */
static lbk_status reduce_results(lbk_run_state *s)
{
    lbk_classify_confusion *c = &s->confusion;
    lbk_report *r = &s->report;
    const lbk_index_info *info = lbk_index_info_of(s->index);
    for (int i = 0; i < LBK_PHASE_COUNT; i++)
        s->phase[i] += info->phase[i];
    s->merge_bytes = info->merge_bytes;
    const bool votes = s->job->task != LBK_TASK_REGRESS;
    if (votes && s->shape.query_labels && writes_slices(s) && s->comm->size > 1) {
        uint64_t counts[4] = {c->total, c->correct, c->other, c->correct_top5};
        LBK_TRY(lbk_comm_reduce_sum_u64(s->comm, counts, 4));
        LBK_TRY(lbk_comm_reduce_sum_u64(s->comm, c->matrix,
                                        (uint64_t)c->classes * (uint64_t)c->classes));
        c->total = counts[0];
        c->correct = counts[1];
        c->other = counts[2];
        c->correct_top5 = counts[3];
    }
    if ((s->truth.ids || s->truth.distances) && s->plan.sliced && s->comm->size > 1) {
        lbk_truth_counts *t = &s->truth;
        uint64_t counts[4] = {t->evaluated, t->ids_equal, t->distances_equal, t->distances_exact};
        LBK_TRY(lbk_comm_reduce_sum_u64(s->comm, counts, 4));
        t->evaluated = counts[0];
        t->ids_equal = counts[1];
        t->distances_equal = counts[2];
        t->distances_exact = counts[3];
    }
    LBK_TRY(lbk_comm_reduce_stats(s->comm, s->phase, LBK_PHASE_COUNT, r->phase_min, r->phase_avg,
                                  r->phase_max));
    LBK_TRY(lbk_comm_reduce_sum_u64(s->comm, &s->merge_bytes, 1));
    if (s->job->task == LBK_TASK_REGRESS && s->shape.query_targets)
        LBK_TRY(reduce_score(s));
    LBK_TRY(gather_rank_stats(s));
    return lbk_comm_gather_doubles(s->comm, s->phase, LBK_PHASE_COUNT, s->rank_phases);
}

static void fill_report(lbk_run_state *s)
{
    lbk_report *r = &s->report;
    r->rank_phases = s->rank_phases;
    r->job = s->job;
    r->reference_rows = s->shape.reference_rows;
    r->query_rows = s->shape.query_rows;
    r->dim = s->shape.dim;
    r->reference_labels = s->shape.reference_labels;
    r->query_labels = s->shape.query_labels;
    r->ranks = s->comm->size;
    r->devices = s->devices;
    r->tuning_dir = s->options->tune_cache_dir ? s->options->tune_cache_dir : "";
    const lbk_index_info *info = lbk_index_info_of(s->index);
    r->engine = s->plan.engine;
    r->engine_why = s->plan.engine_why;
    lbk_index_describe(s->index, r->engine_detail, sizeof r->engine_detail);
    r->batches = info->batches;
    r->batch_size = info->batch;
    r->search_s = info->search_s;
    r->checkpoint_s = s->checkpoint ? s->checkpoint_s : -1.0;
    r->checkpoints = s->checkpoints;
    r->merge_bytes = s->merge_bytes;
    const bool regress = s->job->task == LBK_TASK_REGRESS;
    const bool votes = !regress && !lbk_job_radius_task(s->job);
    r->confusion =
        votes && s->shape.query_labels && s->shape.reference_labels ? &s->confusion : NULL;
    r->truth = s->truth.ids || s->truth.distances ? &s->truth : NULL;
    r->score = regress && s->shape.query_targets ? &s->score : NULL;
    r->radius_votes = lbk_job_radius_votes(s->job);
    r->radius_empty = s->radius_empty;
    r->partition = s->plan.partition;
    r->partition_why = s->plan.partition_why;
    r->rank_stats = s->rank_stats;
    r->spatial = info->spatial ? &s->spatial : NULL;
    r->total_s = lbk_timer_now() - s->t_start;
}

/* Rank 0: the report file (a partial file, committed with the results) and
 * the summary. */
static lbk_status write_report(lbk_run_state *s)
{
    fill_report(s);
    if (s->job->output.report[0]) {
        char *text = NULL;
        size_t len = 0;
        lbk_status st = lbk_report_render(&s->report, &text, &len);
        if (st == LBK_OK)
            st = lbk_outputs_write_report(&s->outputs, s->job->output.report, text, len);
        free(text);
        LBK_TRY(st);
    }
    if (!lbk_log_is_quiet())
        lbk_report_print_summary(stdout, &s->report);
    return LBK_OK;
}

lbk_status lbk_run_report_text(lbk_run_state *s, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    LBK_TRY(reduce_results(s));
    if (!s->root)
        return LBK_OK;
    fill_report(s);
    lbk_status st = LBK_OK;
    if (s->job->output.report[0])
        st = lbk_report_render(&s->report, text, len);
    if (st == LBK_OK && !lbk_log_is_quiet())
        lbk_report_print_summary(stdout, &s->report);
    return st;
}

static lbk_status commit_outputs(lbk_run_state *s)
{
    const lbk_status st = s->root ? lbk_outputs_commit(&s->outputs) : LBK_OK;
    s->committed = st == LBK_OK;
    return st;
}

static void run_state_init(lbk_run_state *s, const lbk_comm *comm, lbk_job *job,
                           const lbk_run_options *options)
{
    memset(s, 0, sizeof *s);
    s->comm = comm;
    s->job = job;
    s->options = options;
    s->root = comm->rank == 0;
    s->t_start = lbk_timer_now();
    s->plan.engine_why = "";
    s->plan.partition_why = "";
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++)
        s->held_fd[h] = -1;
}

static void run_state_free(lbk_run_state *s)
{
    if (s->outputs_open && !s->committed)
        lbk_outputs_abort(&s->outputs, s->root && !s->checkpoint); /* kept: the checkpoint's */
    lbk_checkpoint_close(s);
    lbk_classify_confusion_free(&s->confusion);
    lbk_index_destroy(s->index);
    lbk_run_index_free(s);
    lbk_run_graph_free(&s->graph);
    lbk_device_close(s->device);
    lbk_dataset_free(&s->shard);
    lbk_dataset_free(&s->queries);
    free(s->todo);
    lbk_alloc_large_free(s->graph_order);
    lbk_alloc_large_free(s->radii);
    lbk_alloc_large_free(s->predictions);
    lbk_alloc_large_free(s->proba);
    if (s->proba_rows)
        fclose(s->proba_rows);
    free(s->proba_text);
    lbk_alloc_large_free(s->batch_truth);
    lbk_run_targets_free(s);
    lbk_alloc_large_free(s->devices);
    lbk_alloc_large_free(s->rank_phases);
    lbk_alloc_large_free(s->rank_stats);
}

/* The protocol at a glance: each line is one step every rank takes;
 * lbk_comm_agree(comm, phase) means "do this rank's part, then agree". */
lbk_status lbk_run(const lbk_comm *comm, lbk_status load_status, lbk_job *job,
                   const lbk_run_options *options)
{
    lbk_status st;
    lbk_run_state s;
    run_state_init(&s, comm, job, options);
    const bool root = s.root;

    LBK_TRY_GOTO(st, lbk_comm_agree(comm, load_status)); /* rank 0 loaded the job */
    LBK_TRY_GOTO(st, lbk_comm_bcast_job(comm, job));
    if (lbk_job_radius_task(job))
        lbk_run_radius_malloc_policy(); /* the radius graph's per-rank peak (issue 40) */
    lbk_index_params_from_job(job, &s.index_params); /* what the index reads of the job */
    /* Not an option the library reads (its radius searches are float32). */
    s.index_params.radius = lbk_job_radius_task(job) || lbk_job_radius_votes(job);
    s.checkpoint = job->run.checkpoint[0] != '\0';
    lbk_checkpoint_handle_signal(job);
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, probe_inputs(&s))); /* rank 0 probes, checks */
    LBK_TRY_GOTO(st, lbk_comm_bcast_bytes(comm, &s.shape, sizeof s.shape));
    LBK_TRY_GOTO(st, lbk_run_index_share(&s)); /* index.path: load or build */
    /* --resume: the finished rows and the checkpoint's partition */
    LBK_TRY_GOTO(st, read_checkpoint(&s));
    resolve_plan(&s); /* engine, partition */
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, read_inputs(&s)));
    LBK_TRY_GOTO(st, lbk_run_radius_share(&s)); /* query.radii: checked before computing */
    LBK_TRY_GOTO(st, reduce_label_max(&s));
    LBK_TRY_GOTO(st,
                 lbk_run_radius_votes_prepare(&s)); /* classify by radius: the outlier label */
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, open_device(&s)));
    LBK_TRY_GOTO(st, gather_devices(&s));
    LBK_TRY_GOTO(st, build_index(&s)); /* spatial: points to their owners; batches */
    if (options->build_only)
        goto cleanup; /* `lbknn build`: saved, nothing to search */
    if (lbk_job_radius_task(job)) {
        st = lbk_run_radius(&s); /* its own passes and files */
        goto cleanup;
    }
    /* Classify and regress by radius: their buffers are their own. */
    const bool radius_votes = lbk_job_radius_votes(job);
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, radius_votes ? LBK_OK : alloc_batch_buffers(&s)));
    LBK_TRY_GOTO(st, init_graph(&s));
    LBK_TRY_GOTO(st, restore_checkpoint(&s)); /* run.checkpoint: --resume verified */
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, root ? open_outputs(&s, true) : LBK_OK));
    LBK_TRY_GOTO(st, share_output_names(&s));
    LBK_TRY_GOTO(
        st, lbk_comm_agree(comm, !root && writes_slices(&s) ? open_outputs(&s, false) : LBK_OK));
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, s.checkpoint && (s.plan.owns_slice || s.graph_queries)
                                              ? lbk_checkpoint_open_held(&s)
                                              : LBK_OK)); /* held text or graph rows */
    /* per batch: each stage, agree; by radius: the votes and their files */
    LBK_TRY_GOTO(st, radius_votes ? lbk_run_radius_votes(&s) : run_batches(&s));
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, radius_votes ? LBK_OK : lbk_run_emit_finish(&s)));
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, close_outputs(&s)));
    LBK_TRY_GOTO(st, reduce_results(&s));
    LBK_TRY_GOTO(st, lbk_comm_agree(comm, root ? write_report(&s) : LBK_OK));
    /* Only now, with every rank done and agreed, do results appear. */
    st = lbk_comm_agree(comm, commit_outputs(&s));
    if (st == LBK_OK && s.checkpoint)
        lbk_checkpoint_remove(&s); /* the held files, the checkpoint */
cleanup:
    run_state_free(&s);
    return st;
}
