#include "report.h"

#include "inputs.h"
#include "log.h"
#include "try.h"
#include "version.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *lbk_report_phase_name(lbk_report_phase phase)
{
    switch (phase) {
#define LBK_PHASE_NAME_(constant, name)                                                          \
    case constant: return name;
        LBK_INDEX_PHASE_LIST(LBK_PHASE_NAME_)
#undef LBK_PHASE_NAME_
    case LBK_PHASE_COUNT: break;
    }
    return "?";
}

/* Replicated references need no merge; under the spatial partition each
 * query's owner merges the lists it gets back (mpi.merge is not used). */
static const char *merge_name(const lbk_report *r)
{
    switch (r->partition) {
    case LBK_PARTITION_REPLICATE: return "none";
    case LBK_PARTITION_SPATIAL: return "owner";
    case LBK_PARTITION_AUTO:
    case LBK_PARTITION_SHARD: break;
    }
    return lbk_merge_mode_name(r->job->mpi.merge);
}

static uint64_t phase2_queries(const lbk_report *r)
{
    uint64_t n = 0;
    for (int i = 0; i < r->ranks; i++)
        n += r->rank_stats[i].owned_phase2;
    return n;
}

/* The busiest rank's searched queries over the mean: 1 when balanced. */
static double query_imbalance(const lbk_report *r)
{
    uint64_t total = 0, most = 0;
    for (int i = 0; i < r->ranks; i++) {
        const uint64_t n = r->rank_stats[i].queries_phase1 + r->rank_stats[i].queries_phase2;
        total += n;
        most = n > most ? n : most;
    }
    return total ? (double)most * r->ranks / (double)total : 1.0;
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* The total, busiest rank and imbalance (max / mean) of the work count
 * at `offset` of lbk_report_rank_stats over the ranks. */
typedef struct {
    uint64_t total, max;
    double imbalance;
} work_sum;

static work_sum work_of(const lbk_report *r, size_t offset)
{
    work_sum w = {0, 0, 1.0};
    for (int i = 0; i < r->ranks && r->rank_stats; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&r->rank_stats[i] + offset, sizeof v);
        w.total += v;
        w.max = v > w.max ? v : w.max;
    }
    if (w.total)
        w.imbalance = (double)w.max * (double)r->ranks / (double)w.total;
    return w;
}

#define LBK_WORK_COUNTS(X)                                                                       \
    X(distance_evals) X(nodes_visited) X(queries_answered) X(bytes_sent) X(bytes_received)

/* Each rank's points, queries, bytes and memory peaks (the first 8). */
static void print_rank_stats(FILE *out, const lbk_report *r)
{
    for (int i = 0; i < r->ranks && r->rank_stats; i++) {
        if (i == 8 && r->ranks > 9) {
            fprintf(out, "  ...        (%d more ranks; see the report)\n", r->ranks - 8);
            break;
        }
        const lbk_report_rank_stats *st = &r->rank_stats[i];
        fprintf(out, "  rank %-5d  points %" PRIu64 "  queries %" PRIu64, i, st->points,
                st->queries_phase1);
        if (r->spatial)
            fprintf(out, " + %" PRIu64 " (phase 2)", st->queries_phase2);
        fprintf(out, "  sent %.2f MiB  peak rss %.1f MiB", mib(st->bytes_sent),
                mib(st->peak_rss_bytes));
        if (st->peak_device_bytes)
            fprintf(out, "  device %.1f MiB", mib(st->peak_device_bytes));
        fputc('\n', out);
    }
}

/* The work counts' totals over the ranks and how far the busiest rank is
 * above the mean: the machine-independent side of the timings. */
static void print_work(FILE *out, const lbk_report *r)
{
    const work_sum evals = work_of(r, offsetof(lbk_report_rank_stats, distance_evals));
    const work_sum nodes = work_of(r, offsetof(lbk_report_rank_stats, nodes_visited));
    const work_sum answered = work_of(r, offsetof(lbk_report_rank_stats, queries_answered));
    fprintf(out, "  work       %" PRIu64 " distance evals (busiest rank %.2fx the mean)",
            evals.total, evals.imbalance);
    if (nodes.total)
        fprintf(out, "  %" PRIu64 " tree nodes (%.2fx)", nodes.total, nodes.imbalance);
    fprintf(out, "  %" PRIu64 " queries answered\n", answered.total);
}

static void print_spatial(FILE *out, const lbk_report *r)
{
    const lbk_report_spatial *sp = r->spatial;
    if (!sp)
        return;
    fprintf(out,
            "  spatial    top tree %d level%s, redistribution %.3f s and %.2f MiB; phase 2 "
            "for %.2f%% of the queries; busiest rank %.2fx the mean\n",
            sp->levels, sp->levels == 1 ? "" : "s", sp->redistribute_s,
            mib(sp->redistribute_bytes),
            r->query_rows ? 100.0 * (double)phase2_queries(r) / (double)r->query_rows : 0.0,
            query_imbalance(r));
}

static void print_devices(FILE *out, const lbk_report *r)
{
    for (int i = 0; i < r->ranks; i++) {
        if (i == 8 && r->ranks > 9) {
            fprintf(out, "  ...        (%d more ranks; see the report)\n", r->ranks - 8);
            break;
        }
        const lbk_report_rank_device *d = &r->devices[i];
        fprintf(out, "  device     rank %d: %s", i, d->desc);
        if (d->cpu_threads > 0)
            fprintf(out, "  cpu_threads=%d (%s)", d->cpu_threads,
                    lbk_cpu_threads_source_name(d->cpu_threads_source));
        char tuning[128];
        lbk_tuning_format(&d->tuning, tuning, sizeof tuning);
        fprintf(out, "\n             kernels %s (%s)\n", tuning,
                lbk_tuning_source_name(d->tuning.source));
    }
}

static void print_timings(FILE *out, const lbk_report *r)
{
    fprintf(out, "  phase          %s\n",
            r->ranks > 1 ? "min / avg / max over ranks (s)" : "seconds");
    for (int p = 0; p < LBK_PHASE_COUNT; p++) {
        if (r->ranks > 1)
            fprintf(out, "    %-11s %9.3f %9.3f %9.3f\n",
                    lbk_report_phase_name((lbk_report_phase)p), r->phase_min[p], r->phase_avg[p],
                    r->phase_max[p]);
        else
            fprintf(out, "    %-11s %9.3f\n", lbk_report_phase_name((lbk_report_phase)p),
                    r->phase_max[p]);
    }
    fprintf(out, "  total      %.3f s;  search %.3f s;  %.0f queries/s\n", r->total_s,
            r->search_s, r->search_s > 0 ? (double)r->query_rows / r->search_s : 0.0);
}

/* Paths in the summary, escaped (lbk_log_shown); longer ones end in "...". */
#define SHOWN_MAX 4096

static double fraction(uint64_t n, uint64_t of) { return of ? (double)n / (double)of : 0.0; }

/* The ground truth's agreement, for people (truth.h). */
static void print_truth(FILE *out, const lbk_truth_counts *t)
{
    if (!t)
        return;
    fprintf(out, "  truth     ");
    if (t->ids)
        fprintf(out, " ids %.4f (%" PRIu64 " / %" PRIu64 ")",
                fraction(t->ids_equal, t->evaluated), t->ids_equal, t->evaluated);
    if (t->distances)
        fprintf(out, "  distances %.4f (%" PRIu64 " / %" PRIu64 "), exact %.4f",
                fraction(t->distances_equal, t->evaluated), t->distances_equal, t->evaluated,
                fraction(t->distances_exact, t->evaluated));
    fprintf(out, "\n");
}

void lbk_report_print_summary(FILE *out, const lbk_report *r)
{
    const lbk_job *job = r->job;
    char shown[SHOWN_MAX];
    fprintf(out, "lbknn %s  job: %s  task: %s\n", LBK_VERSION,
            lbk_log_shown(job->source, shown, sizeof shown), lbk_task_name(job->task));
    fprintf(out, "  reference  %" PRIu64 " x %d  (%s)%s\n", r->reference_rows, r->dim,
            lbk_log_shown(lbk_inputs_name(job, false), shown, sizeof shown),
            r->reference_labels ? "" : "  [no labels]");
    fprintf(out, "  queries    %" PRIu64 " x %d  (%s)%s\n", r->query_rows, r->dim,
            lbk_log_shown(lbk_inputs_name(job, true), shown, sizeof shown),
            r->query_labels ? "" : "  [no labels]");
    if (r->radius_votes && job->radius.radii[0])
        fprintf(out, "  knn        radius=per query  metric=%s  weights=%s",
                lbk_metric_name(job->knn.metric), lbk_weights_name(job->knn.weights));
    else if (r->radius_votes)
        fprintf(out, "  knn        radius=%g  metric=%s  weights=%s", lbk_job_radius(job),
                lbk_metric_name(job->knn.metric), lbk_weights_name(job->knn.weights));
    else
        fprintf(out, "  knn        k=%d  metric=%s  weights=%s", job->knn.k,
                lbk_metric_name(job->knn.metric), lbk_weights_name(job->knn.weights));
    if (job->knn.weights == LBK_WEIGHTS_SOFTMAX)
        fprintf(out, "  temperature=%g", job->knn.temperature);
    fputc('\n', out);
    fprintf(out, "  engine     %s  (%s)\n", lbk_engine_name(r->engine), r->engine_why);
    if (r->engine_detail[0])
        fprintf(out, "             %s\n", r->engine_detail);
    fprintf(out,
            "  ranks      %d  partition=%s  merge=%s  batches=%" PRIu64 " x %" PRIu64
            " queries\n",
            r->ranks, lbk_partition_name(r->partition), merge_name(r), r->batches, r->batch_size);
    fprintf(out, "             partition: %s\n", r->partition_why);
    print_devices(out, r);
    print_timings(out, r);
    if (r->ranks > 1)
        fprintf(out, "  merge      %.2f MiB moved\n", mib(r->merge_bytes));
    print_spatial(out, r);
    print_work(out, r);
    print_rank_stats(out, r);
    if (r->score && r->score->count > 0)
        fprintf(out, "  R^2        %.6f  mean absolute error %.6g  (%" PRIu64 " queries)\n",
                lbk_regress_score_r2(r->score), lbk_regress_score_mae(r->score), r->score->count);
    if (r->radius_empty > 0)
        fprintf(out,
                "  warning    %" PRIu64 " of %" PRIu64 " queries have no neighbour within the "
                "radius: their values are NaN%s\n",
                r->radius_empty, r->query_rows, r->score ? ", left out of R^2" : "");
    if (r->confusion && r->confusion->total > 0) {
        const lbk_classify_confusion *c = r->confusion;
        fprintf(out, "  accuracy   %.4f  (%" PRIu64 " / %" PRIu64 ")\n",
                (double)c->correct / (double)c->total, c->correct, c->total);
        fprintf(out, "  top-5      %.4f  (%" PRIu64 " / %" PRIu64 ")\n",
                (double)c->correct_top5 / (double)c->total, c->correct_top5, c->total);
    }
    print_truth(out, r->truth);
#define PRINT_OUTPUT_(name)                                                                      \
    if (job->output.name[0])                                                                     \
        fprintf(out, "  %-10s %s\n", #name, lbk_log_shown(job->output.name, shown, sizeof shown));
    LBK_JOB_OUTPUT_LIST(PRINT_OUTPUT_)
#undef PRINT_OUTPUT_
}

static void report_truth(FILE *f, const lbk_truth_counts *t)
{
    if (!t) {
        fprintf(f, "ground_truth: null  # the job names none (query.neighbors, "
                   "query.distances)\n");
        return;
    }
    fprintf(f, "ground_truth: {evaluated: %" PRIu64, t->evaluated);
    if (t->ids)
        fprintf(f, ", ids_equal: %" PRIu64 ", ids_fraction: %.6f", t->ids_equal,
                fraction(t->ids_equal, t->evaluated));
    if (t->distances)
        fprintf(f,
                ", distances_equal: %" PRIu64
                ", distances_fraction: %.6f, distances_exact: %" PRIu64
                ", distances_exact_fraction: %.6f",
                t->distances_equal, fraction(t->distances_equal, t->evaluated),
                t->distances_exact, fraction(t->distances_exact, t->evaluated));
    fprintf(f, "}\n");
}

static void report_inputs(FILE *f, const lbk_report *r)
{
    const lbk_job *job = r->job;
    fprintf(f, "lbknn_version: \"%s\"\n", LBK_VERSION);
    lbk_version_print_yaml(f);
    fprintf(f, "job_file: ");
    lbk_job_print_string(f, job->source);
    fprintf(f, "\njob:\n");
    lbk_job_print(job, f, 2);
    fprintf(f, "inputs:\n  reference: {source: ");
    lbk_job_print_string(f, lbk_inputs_name(job, false));
    fprintf(f, ", rows: %" PRIu64 ", dim: %d, labels: %s}\n", r->reference_rows, r->dim,
            r->reference_labels ? "true" : "false");
    fprintf(f, "  query: {source: ");
    lbk_job_print_string(f, lbk_inputs_name(job, true));
    fprintf(f, ", rows: %" PRIu64 ", dim: %d, labels: %s}\n", r->query_rows, r->dim,
            r->query_labels ? "true" : "false");
    fprintf(f, "engine: {name: %s, reason: ", lbk_engine_name(r->engine));
    lbk_job_print_string(f, r->engine_why);
    fprintf(f, ", k: %d, metric: %s, weights: %s", job->knn.k, lbk_metric_name(job->knn.metric),
            lbk_weights_name(job->knn.weights));
    if (job->knn.weights == LBK_WEIGHTS_SOFTMAX)
        fprintf(f, ", temperature: %.17g", job->knn.temperature);
    fprintf(f, "}\n");
    if (r->engine_detail[0])
        fprintf(f, "%s\n", r->engine_detail);
}

static void report_devices(FILE *f, const lbk_report *r)
{
    fprintf(f, "ranks: %d\ndevices:\n", r->ranks);
    for (int i = 0; i < r->ranks; i++) {
        const lbk_report_rank_device *d = &r->devices[i];
        fprintf(f, "  - {rank: %d, device: ", i);
        lbk_job_print_string(f, d->desc);
        if (d->cpu_threads > 0)
            fprintf(f, ", cpu_threads: %d, cpu_threads_source: %s", d->cpu_threads,
                    lbk_cpu_threads_source_name(d->cpu_threads_source));
        fprintf(f, "}\n");
    }
}

/* The kernel parameters each rank's device ran with, where they came from
 * (derived, tuned: the `lbknn tune` cache, job) and the cache file each
 * looked for (in tuning_cache_dir, rank 0's). */
static void report_tuning(FILE *f, const lbk_report *r)
{
    fprintf(f, "tuning_cache_dir: ");
    lbk_job_print_string(f, r->tuning_dir ? r->tuning_dir : "");
    fprintf(f, "\ntuning:\n");
    for (int i = 0; i < r->ranks; i++) {
        const lbk_tuning *t = &r->devices[i].tuning;
        fprintf(f,
                "  - {rank: %d, source: %s, lanes: %d, block_queries: %d, block_vectors: %d, "
                "tile_blocks: %d, slice: %d, segment_log2: %d, cache_file: ",
                i, lbk_tuning_source_name(t->source), t->lanes, t->block_queries,
                t->block_vectors, t->tile_blocks, t->slice, t->segment_log2);
        lbk_job_print_string(f, r->devices[i].tuning_file);
        fprintf(f, "}\n");
    }
}

static void report_timings(FILE *f, const lbk_report *r)
{
    fprintf(f, "timings_s:\n");
    for (int p = 0; p < LBK_PHASE_COUNT; p++)
        fprintf(f, "  %s: {min: %.6f, avg: %.6f, max: %.6f}\n",
                lbk_report_phase_name((lbk_report_phase)p), r->phase_min[p], r->phase_avg[p],
                r->phase_max[p]);
    fprintf(f, "  total: %.6f\n  search: %.6f\n", r->total_s, r->search_s);
    if (r->checkpoint_s >= 0)
        fprintf(f,
                "  checkpoint: %.6f  # of search, rank 0: the per-batch agreement and %" PRIu64
                " checkpoints written\n",
                r->checkpoint_s, r->checkpoints);
    if (r->ranks > 1 && r->rank_phases) {
        fprintf(f, "rank_timings_s:\n");
        for (int i = 0; i < r->ranks; i++) {
            fprintf(f, "  - {rank: %d", i);
            for (int p = 0; p < LBK_PHASE_COUNT; p++)
                fprintf(f, ", %s: %.6f", lbk_report_phase_name((lbk_report_phase)p),
                        r->rank_phases[(size_t)i * LBK_PHASE_COUNT + (size_t)p]);
            fprintf(f, "}\n");
        }
    }
    fprintf(f, "queries_per_second: %.1f\n",
            r->search_s > 0 ? (double)r->query_rows / r->search_s : 0.0);
}

static bool job_takes_no_votes(const lbk_report *r) { return r->job->task != LBK_TASK_CLASSIFY; }

/* Task regress: scikit-learn's r2_score and mean_absolute_error, printed
 * so that the doubles read back exactly. */
static void report_regression(FILE *f, const lbk_report *r)
{
    const lbk_regress_score *s = r->score;
    if (!s || s->count == 0) {
        fprintf(f, "r2: null  # %s\n",
                !s ? "the queries have no targets" : "no query was evaluated");
        return;
    }
    fprintf(f, "r2: %.17g\nmean_absolute_error: %.17g\nevaluated: %" PRIu64 "\n",
            lbk_regress_score_r2(s), lbk_regress_score_mae(s), s->count);
}

/* Regression by radius: the queries without a neighbour (NaN, not scored). */
static void report_radius_empty(FILE *f, const lbk_report *r)
{
    if (r->radius_votes && r->job->task == LBK_TASK_REGRESS)
        fprintf(f, "queries_without_neighbours: %" PRIu64 "\n", r->radius_empty);
}

static void report_accuracy(FILE *f, const lbk_report *r)
{
    if (r->job->task == LBK_TASK_REGRESS) {
        report_regression(f, r);
        report_radius_empty(f, r);
        return;
    }
    const lbk_classify_confusion *c = r->confusion;
    if (!c || c->total == 0) {
        /* No score: say why (either side may lack labels). */
        fprintf(f, "accuracy: null  # %s\n",
                job_takes_no_votes(r)  ? "the task takes no votes"
                : !r->query_labels     ? "the queries have no labels"
                : !r->reference_labels ? "the reference has no labels"
                                       : "no query was evaluated");
        return;
    }
    fprintf(f, "accuracy: %.6f\ncorrect: %" PRIu64 "\nevaluated: %" PRIu64 "\n",
            (double)c->correct / (double)c->total, c->correct, c->total);
    fprintf(f, "top5_accuracy: %.6f\ncorrect_top5: %" PRIu64 "\n",
            (double)c->correct_top5 / (double)c->total, c->correct_top5);
    if (c->classes == 0)
        return;
    fprintf(f, "confusion_matrix:  # rows: true label 0..%d, columns: predicted\n",
            c->classes - 1);
    for (int t = 0; t < c->classes; t++) {
        fprintf(f, "  - [");
        for (int p = 0; p < c->classes; p++)
            fprintf(f, "%s%" PRIu64, p ? ", " : "", c->matrix[(size_t)t * c->classes + p]);
        fprintf(f, "]\n");
    }
    if (c->other)
        fprintf(f, "confusion_outside_matrix: %" PRIu64 "\n", c->other);
}

/* Where the ranks' peak_rss_bytes come from: VmHWM, the process's own peak,
 * or (no /proc) getrusage's ru_maxrss, which on Linux keeps the launching
 * process's peak across exec; "mixed" where the ranks differ. */
static const char *peak_rss_source(const lbk_report *r)
{
    int vmhwm = 0;
    for (int i = 0; i < r->ranks && r->rank_stats; i++)
        vmhwm += r->rank_stats[i].peak_rss_vmhwm != 0;
    if (vmhwm == r->ranks)
        return "VmHWM";
    return vmhwm ? "mixed  # VmHWM on some ranks, ru_maxrss on the others"
                 : "ru_maxrss  # no /proc: may include the launcher's peak";
}

/* The partition and why, the merge, the spatial numbers, every rank's. */
static void report_partition(FILE *f, const lbk_report *r)
{
    fprintf(f, "partition: {name: %s, reason: ", lbk_partition_name(r->partition));
    lbk_job_print_string(f, r->partition_why);
    fprintf(f, "}\nmerge: {mode: %s, bytes: %" PRIu64 "}\n", merge_name(r), r->merge_bytes);
    if (r->spatial) {
        const uint64_t extra = phase2_queries(r);
        fprintf(
            f,
            "spatial: {top_tree_levels: %d, redistribute_s: %.6f, redistribute_bytes: %" PRIu64
            ", query_imbalance: %.4f, queries_phase2: %" PRIu64 ", phase2_fraction: %.6f}\n",
            r->spatial->levels, r->spatial->redistribute_s, r->spatial->redistribute_bytes,
            query_imbalance(r), extra,
            r->query_rows ? (double)extra / (double)r->query_rows : 0.0);
    }
    fprintf(f, "peak_rss_source: %s\nrank_stats:\n", peak_rss_source(r));
    for (int i = 0; i < r->ranks && r->rank_stats; i++) {
        const lbk_report_rank_stats *st = &r->rank_stats[i];
        fprintf(f,
                "  - {rank: %d, points: %" PRIu64 ", queries_phase1: %" PRIu64
                ", queries_phase2: %" PRIu64 ", queries_owned: %" PRIu64 ", bytes_sent: %" PRIu64
                ", bytes_received: %" PRIu64 ", distance_evals: %" PRIu64
                ", nodes_visited: %" PRIu64 ", queries_answered: %" PRIu64
                ", peak_rss_bytes: %" PRIu64 ", peak_device_bytes: ",
                i, st->points, st->queries_phase1, st->queries_phase2, st->queries_owned,
                st->bytes_sent, st->bytes_received, st->distance_evals, st->nodes_visited,
                st->queries_answered, st->peak_rss_bytes);
        fprintf(f,
                "%" PRIu64 ", reference_device_bytes: %" PRIu64 ", reference_host_bytes: %" PRIu64
                "}\n",
                st->peak_device_bytes, st->reference_device_bytes, st->reference_host_bytes);
    }
}

/* The work counts over the ranks, ready for a work-efficiency: a P = 1
 * run's total over (ranks x max) of this run's (docs/cluster.md). */
static void report_work(FILE *f, const lbk_report *r)
{
    fprintf(f, "work:  # efficiency vs a P = 1 run: its total / (ranks x max here)\n");
    fprintf(f, "  ranks: %d\n", r->ranks);
#define LBK_WORK_LINE_(field)                                                                    \
    {                                                                                            \
        const work_sum w = work_of(r, offsetof(lbk_report_rank_stats, field));                   \
        fprintf(f, "  " #field ": {total: %" PRIu64 ", max: %" PRIu64 ", imbalance: %.4f}\n",    \
                w.total, w.max, w.imbalance);                                                    \
    }
    LBK_WORK_COUNTS(LBK_WORK_LINE_)
#undef LBK_WORK_LINE_
}

static void write_report_body(FILE *f, const lbk_report *r)
{
    report_inputs(f, r);
    report_devices(f, r);
    report_tuning(f, r);
    fprintf(f, "batches: %" PRIu64 "\nbatch_size: %" PRIu64 "\n", r->batches, r->batch_size);
    report_timings(f, r);
    report_partition(f, r);
    report_work(f, r);
    report_accuracy(f, r);
    report_truth(f, r->truth);
}

lbk_status lbk_report_render(const lbk_report *r, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    LBK_FAIL_IF(!f, LBK_ERR_NOMEM, "out of host memory rendering the report");
    write_report_body(f, r);
    if (fclose(f) != 0) {
        lbk_error("out of host memory rendering the report");
        free(*text);
        *text = NULL;
        return LBK_ERR_NOMEM;
    }
    return LBK_OK;
}
