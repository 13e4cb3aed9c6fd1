/* The job's rules: each key's range (checked as a value is parsed, and again
 * on the struct by lbk_job_validate, since a job may also be built or
 * changed by code) and the rules that involve more than one key. */
#include "job_parse.h"

#include "try.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>

static const yaml_mark_t nowhere = {0, 0, 0};

static lbk_status range_error(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                              const lbk_job_key_desc *d)
{
    if (d->max == INT64_MAX || (d->max == INT_MAX && d->kind != LBK_KEY_U64)) {
        if (d->min == 0)
            return lbk_job_fail(c, mark, "%s must not be negative", key);
        return lbk_job_fail(c, mark, "%s must be at least %" PRId64, key, d->min);
    }
    return lbk_job_fail(c, mark, "%s must be between %" PRId64 " and %" PRId64, key, d->min,
                        d->max);
}

lbk_status lbk_job_check_int(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                             const lbk_job_key_desc *d, int64_t v, bool overflow)
{
    if (overflow || v < d->min || v > d->max)
        return range_error(c, mark, key, d);
    return LBK_OK;
}

lbk_status lbk_job_check_positive(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                  double v)
{
    if (!isfinite(v) || !(v > 0.0))
        return lbk_job_fail(c, mark, "%s must be a positive finite number", key);
    return LBK_OK;
}

lbk_status lbk_job_check_finite(const lbk_job_ctx *c, yaml_mark_t mark, const char *key, double v)
{
    if (!isfinite(v) || fabs(v) > FLT_MAX)
        return lbk_job_fail(c, mark, "%s must be a finite number", key);
    return LBK_OK;
}

lbk_status lbk_job_check_list_len(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                  int len)
{
    if (len < 0 || len > LBK_JOB_MAX_DEVICE_LIST)
        return lbk_job_fail(c, mark, "%s has more than %d entries", key, LBK_JOB_MAX_DEVICE_LIST);
    return LBK_OK;
}

lbk_status lbk_job_check_device(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                const lbk_job_key_desc *d, int64_t v, bool overflow)
{
    if (overflow || v < d->min || v > d->max)
        return lbk_job_fail(c, mark, "%s entries must be device indices >= 0", key);
    return LBK_OK;
}

bool lbk_job_delimiter_ok(char ch) { return ch != '\0' && !strchr("\"\r\n.+-0123456789eE", ch); }

static lbk_status check_device_list(const lbk_job_ctx *c, const lbk_job *job,
                                    const lbk_job_key_desc *d, const char *key)
{
    LBK_TRY(lbk_job_check_list_len(c, nowhere, key, job->device.list_len));
    for (int j = 0; j < job->device.list_len; j++)
        LBK_TRY(lbk_job_check_device(c, nowhere, key, d, job->device.list[j], false));
    return LBK_OK;
}

/* One key's value on the struct: what parsing it would have allowed. */
static lbk_status check_field(const lbk_job_ctx *c, const lbk_job *job, const lbk_job_key_desc *d,
                              const char *key)
{
    const void *p = lbk_job_key_cfield(job, d);
    int v = 0;
    switch (d->kind) {
    case LBK_KEY_INT: return lbk_job_check_int(c, nowhere, key, d, *(const int *)p, false);
    case LBK_KEY_U64: {
        const uint64_t u = *(const uint64_t *)p;
        return lbk_job_check_int(c, nowhere, key, d, (int64_t)u, u > INT64_MAX);
    }
    case LBK_KEY_DOUBLE: return lbk_job_check_positive(c, nowhere, key, *(const double *)p);
    case LBK_KEY_REAL: return lbk_job_check_finite(c, nowhere, key, *(const double *)p);
    case LBK_KEY_ENUM:
        memcpy(&v, p, sizeof v);
        if (!lbk_enum_find_value(d->items, v))
            return lbk_job_fail(c, nowhere, "%s has an invalid value (%d)", key, v);
        return LBK_OK;
    case LBK_KEY_HEADER:
        v = *(const int *)p;
        if (v < -1 || v > 1)
            return lbk_job_fail(c, nowhere, "%s has an invalid value (%d)", key, v);
        return LBK_OK;
    case LBK_KEY_CHAR:
        if (!lbk_job_delimiter_ok(*(const char *)p))
            return lbk_job_fail(c, nowhere, "%s cannot be '%c'", key, *(const char *)p);
        return LBK_OK;
    case LBK_KEY_IN_PATH:
    case LBK_KEY_OUT_PATH:
        if (memchr(p, '\0', LBK_PATH_MAX) == NULL)
            return lbk_job_fail(c, nowhere, "%s is too long", key);
        return LBK_OK;
    case LBK_KEY_NAME:
        if (memchr(p, '\0', LBK_NAME_MAX) == NULL)
            return lbk_job_fail(c, nowhere, "%s is too long", key);
        return LBK_OK;
    case LBK_KEY_DEV_LIST: return check_device_list(c, job, d, key);
    case LBK_KEY_BOOL: return LBK_OK;
    }
    return LBK_OK;
}

static lbk_status check_fields(const lbk_job_ctx *c, const lbk_job *job)
{
    for (int i = 0; i < lbk_job_key_count; i++) {
        char key[64];
        lbk_job_key_name(&lbk_job_keys[i], key, sizeof key);
        LBK_TRY(check_field(c, job, &lbk_job_keys[i], key));
    }
    return LBK_OK;
}

/* A target column, like a label column, is a column of CSV points, and
 * not the label's. */
static lbk_status check_target_column(const lbk_job_ctx *c, const lbk_job *job,
                                      const lbk_job_input_spec *in, const char *name)
{
    if (in->target_column < 0)
        return LBK_OK;
    const yaml_mark_t at = lbk_job_mark_of(c, job, &in->target_column);
    if (in->format != LBK_FORMAT_AUTO && in->format != LBK_FORMAT_CSV)
        return lbk_job_fail(c, at, "%s.target_column needs CSV points, but %s.format is %s", name,
                            name, lbk_format_name(in->format));
    if (in->targets[0])
        return lbk_job_fail(
            c, at, "%s.target_column and %s.targets both give the targets; use one", name, name);
    if (in->target_column == in->label_column)
        return lbk_job_fail(c, at, "%s.target_column and %s.label_column are both column %d",
                            name, name, in->target_column);
    return LBK_OK;
}

static lbk_status check_input(const lbk_job_ctx *c, const lbk_job *job,
                              const lbk_job_input_spec *in, int section)
{
    const char *name = lbk_job_sections[section].name;
    if (in->targets[0] && !in->path[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, in->targets),
                            "%s.targets given without %s.path", name, name);
    LBK_TRY(check_target_column(c, job, in, name));
    if (in->labels[0] && !in->path[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, in->labels),
                            "%s.labels given without %s.path", name, name);
    if (in->label_column < 0)
        return LBK_OK;
    if (in->format != LBK_FORMAT_AUTO && in->format != LBK_FORMAT_CSV)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &in->label_column),
                            "%s.label_column needs CSV points, but %s.format is %s", name, name,
                            lbk_format_name(in->format));
    if (in->labels[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &in->label_column),
                            "%s.label_column and %s.labels both give the labels; use one", name,
                            name);
    return LBK_OK;
}

/* Ground truth is of queries read from a file (the synthetic set has none). */
static lbk_status check_truth(const lbk_job_ctx *c, const lbk_job *job)
{
    const char *const given[2] = {job->truth.neighbors, job->truth.distances};
    const char *const names[2] = {"neighbors", "distances"};
    for (int i = 0; i < 2; i++)
        if (given[i][0] && !job->query.path[0])
            return lbk_job_fail(c, lbk_job_mark_of(c, job, given[i]),
                                "query.%s (the ground truth) given without query.path", names[i]);
    return LBK_OK;
}

/* Two outputs in one file would be written over each other and then
 * renamed into place twice: a garbled file from a failed run. */
static lbk_status check_outputs_differ(const lbk_job_ctx *c, const lbk_job *job)
{
#define OUTPUT_ENTRY_(member) {#member, job->output.member},
    const struct {
        const char *name;
        const char *path;
    } out[] = {LBK_JOB_OUTPUT_LIST(OUTPUT_ENTRY_)};
#undef OUTPUT_ENTRY_
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        for (int j = 0; j < i; j++)
            if (out[i].path[0] && strcmp(out[i].path, out[j].path) == 0)
                return lbk_job_fail(c, lbk_job_mark_of(c, job, out[i].path),
                                    "output.%s and output.%s name the same file '%.64s'",
                                    out[j].name, out[i].name, out[i].path);
    return LBK_OK;
}

static lbk_status check_synthetic(const lbk_job_ctx *c, const lbk_job *job)
{
    if ((uint64_t)job->synthetic.classes <= job->synthetic.points)
        return LBK_OK;
    /* Point at whichever of the two the file gave, classes first. */
    const void *at = lbk_job_key_seen(c, job, &job->synthetic.classes)
                         ? (const void *)&job->synthetic.classes
                         : (const void *)&job->synthetic.points;
    return lbk_job_fail(c, lbk_job_mark_of(c, job, at),
                        "synthetic.classes (%d) must not exceed synthetic.points (%" PRIu64 ")",
                        job->synthetic.classes, job->synthetic.points);
}

/* Kernel parameters: 0 keeps the tuned or derived value; the others must
 * be what the kernels are built for (src/engines/tuning.h). */
static lbk_status check_tuning(const lbk_job_ctx *c, const lbk_job *job)
{
    const int lanes = job->tuning.lanes;
    if (lanes != 0 && lanes != 4 && lanes != 8 && lanes != 16)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->tuning.lanes),
                            "tuning.lanes must be 4, 8 or 16 (or 0: from the device), not %d",
                            lanes);
    if (job->tuning.slice != 0 && job->tuning.slice < 8)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->tuning.slice),
                            "tuning.slice must be at least 8 (or 0: from the device), not %d",
                            job->tuning.slice);
    if (job->tuning.segment_log2 != 0 && job->tuning.segment_log2 < 4)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->tuning.segment_log2),
                            "tuning.segment_log2 must be 4..24 (or 0: from the device), not %d",
                            job->tuning.segment_log2);
    return LBK_OK;
}

/* The k-d tree prunes with coordinate planes, and the spatial partition
 * with boxes: bounds that hold for the L_p metrics only; cosine and ip have
 * no such bound. Its candidate list is
 * an insertion sort per work-item, kept to K <= LBK_TREE_K_MAX. */
static lbk_status check_knn(const lbk_job_ctx *c, const lbk_job *job)
{
    const lbk_metric metric = job->knn.metric;
    const bool similarity = metric == LBK_METRIC_COSINE || metric == LBK_METRIC_IP;
    if (job->knn.engine == LBK_ENGINE_KDTREE && similarity)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->knn.engine),
                            "knn.engine kdtree supports the metrics l2, l1 and linf, not %s; "
                            "use brute (or auto)",
                            lbk_metric_name(metric));
    if (job->knn.engine == LBK_ENGINE_KDTREE && job->knn.k > LBK_TREE_K_MAX)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->knn.k),
                            "knn.k = %d: the k-d tree supports K up to %d; use knn.engine "
                            "brute (or auto) for larger K",
                            job->knn.k, LBK_TREE_K_MAX);
    /* The spatial partition routes queries by the distance to a rank's box,
     * the same L_p bound as the tree's planes. */
    if (job->mpi.partition == LBK_PARTITION_SPATIAL && similarity)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->mpi.partition),
                            "mpi.partition spatial supports the metrics l2, l1 and linf, not "
                            "%s; use shard, replicate (or auto)",
                            lbk_metric_name(metric));
    if (job->knn.weights == LBK_WEIGHTS_DISTANCE && metric == LBK_METRIC_IP)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->knn.weights),
                            "knn.weights distance needs a distance, and ip has none (a larger "
                            "dot product is nearer); use uniform or softmax");
    return LBK_OK;
}

static lbk_status check_labels_for(const lbk_job_ctx *c, const lbk_job *job, const char *path,
                                   const char *name)
{
    if (path[0] && job->reference.path[0] && !job->reference.labels[0] &&
        job->reference.label_column < 0)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, path),
                            "output.%s needs reference labels (reference.labels or "
                            "reference.label_column)",
                            name);
    return LBK_OK;
}

/* An output the task does not make, pointed at where the job names it. */
static lbk_status check_output_for_task(const lbk_job_ctx *c, const lbk_job *job,
                                        const char *path, const char *name, bool made)
{
    if (path[0] && !made)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, path),
                            "output.%s is not made by task %s (docs/user-guide.md, \"Tasks\")",
                            name, lbk_task_name(job->task));
    return LBK_OK;
}

/* Targets are what task regress averages, and nothing else reads them: a
 * job that gives them to another task has most likely forgotten `task`. */
static lbk_status check_targets_for_task(const lbk_job_ctx *c, const lbk_job *job)
{
    const lbk_job_input_spec *const in[] = {&job->reference, &job->query};
    for (int i = 0; i < 2 && job->task != LBK_TASK_REGRESS; i++) {
        const char *name = i ? "query" : "reference";
        if (in[i]->targets[0])
            return lbk_job_fail(c, lbk_job_mark_of(c, job, in[i]->targets),
                                "%s.targets is read by task regress only, and the task is %s",
                                name, lbk_task_name(job->task));
        if (in[i]->target_column >= 0)
            return lbk_job_fail(c, lbk_job_mark_of(c, job, &in[i]->target_column),
                                "%s.target_column is read by task regress only, and the task "
                                "is %s",
                                name, lbk_task_name(job->task));
    }
    if (job->task != LBK_TASK_REGRESS || job->reference.targets[0] ||
        job->reference.target_column >= 0)
        return LBK_OK;
    /* The synthetic data set has labels, not targets. */
    return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->task),
                        "task regress needs reference targets (reference.targets or "
                        "reference.target_column)");
}

/* Task radius and radius_graph: a radius that is a distance, outputs of
 * lists of any length (the CSR graph and the counts), none of K-lists. */
static lbk_status check_radius(const lbk_job_ctx *c, const lbk_job *job)
{
    const bool radius = job->task == LBK_TASK_RADIUS || job->task == LBK_TASK_RADIUS_GRAPH;
    LBK_TRY(check_output_for_task(c, job, job->radius.counts, "counts", radius));
    if (!radius) {
        if (job->radius.radii[0])
            return lbk_job_fail(c, lbk_job_mark_of(c, job, job->radius.radii),
                                "query.radii is read by task radius and radius_graph only");
        return LBK_OK;
    }
    LBK_TRY(check_output_for_task(c, job, job->output.neighbors, "neighbors", false));
    LBK_TRY(check_output_for_task(c, job, job->output.distances, "distances", false));
    if (job->knn.radius < 0 && job->knn.metric != LBK_METRIC_IP)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->knn.radius),
                            "knn.radius = %g: a radius is a distance, >= 0 (only metric ip takes "
                            "a negative one: a least dot product)",
                            job->knn.radius);
    if (job->radius.count_only && job->output.graph[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, job->output.graph),
                            "radius.count_only keeps no lists: output.graph has nothing to hold "
                            "(output.counts takes the counts)");
    if (job->task == LBK_TASK_RADIUS_GRAPH && job->query.path[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, job->query.path),
                            "task radius_graph finds the neighbours of the reference points "
                            "themselves; remove query.path");
    return LBK_OK;
}

/* What each task makes, and the graph's own rules: its queries are the
 * reference points, and each searches K + 1 points (itself among them). */
static lbk_status check_task(const lbk_job_ctx *c, const lbk_job *job)
{
    const lbk_task task = job->task;
    LBK_TRY(check_targets_for_task(c, job));
    const bool votes = task == LBK_TASK_CLASSIFY, graph = task == LBK_TASK_GRAPH;
    LBK_TRY(check_output_for_task(c, job, job->output.predictions, "predictions",
                                  votes || task == LBK_TASK_REGRESS));
    LBK_TRY(check_output_for_task(c, job, job->output.probabilities, "probabilities", votes));
    LBK_TRY(
        check_output_for_task(c, job, job->output.graph, "graph",
                              graph || task == LBK_TASK_RADIUS || task == LBK_TASK_RADIUS_GRAPH));
    LBK_TRY(check_radius(c, job));
    if (!graph)
        return LBK_OK;
    if (job->query.path[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, job->query.path),
                            "task graph finds the neighbours of the reference points "
                            "themselves; remove query.path");
    const int most = job->knn.engine == LBK_ENGINE_KDTREE ? LBK_TREE_K_MAX : LBK_K_MAX;
    if (job->knn.k + 1 > most)
        return lbk_job_fail(c, lbk_job_mark_of(c, job, &job->knn.k),
                            "knn.k = %d: task graph searches K + 1 points (each point finds "
                            "itself), and the %s supports K up to %d",
                            job->knn.k,
                            job->knn.engine == LBK_ENGINE_KDTREE ? "k-d tree" : "search", most);
    return LBK_OK;
}

lbk_status lbk_job_cross_check(const lbk_job_ctx *c, const lbk_job *job)
{
    LBK_TRY(check_task(c, job));
    if (job->query.path[0] && !job->reference.path[0])
        return lbk_job_fail(c, lbk_job_mark_of(c, job, job->query.path),
                            "query.path given without reference.path (the synthetic reference "
                            "brings its own queries)");
    if (job->reference.path[0] && !job->query.path[0] && job->task != LBK_TASK_GRAPH &&
        job->task != LBK_TASK_RADIUS_GRAPH)
        return lbk_job_fail(c, lbk_job_section_mark(c, LBK_SEC_REFERENCE),
                            "reference.path given without query.path");
    LBK_TRY(check_input(c, job, &job->reference, LBK_SEC_REFERENCE));
    LBK_TRY(check_input(c, job, &job->query, LBK_SEC_QUERY));
    LBK_TRY(check_truth(c, job));
    if (job->task == LBK_TASK_CLASSIFY) {
        LBK_TRY(check_labels_for(c, job, job->output.predictions, "predictions"));
        LBK_TRY(check_labels_for(c, job, job->output.probabilities, "probabilities"));
    }
    LBK_TRY(check_knn(c, job));
    LBK_TRY(check_tuning(c, job));
    LBK_TRY(check_outputs_differ(c, job));
    return check_synthetic(c, job);
}

lbk_status lbk_job_validate(const lbk_job *job)
{
    lbk_job_ctx c;
    memset(&c, 0, sizeof c);
    c.origin = job->source[0] ? job->source : "<job>";
    LBK_TRY(check_fields(&c, job));
    return lbk_job_cross_check(&c, job);
}
