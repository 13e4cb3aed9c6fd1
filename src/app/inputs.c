/* realpath is XSI. */
#define _XOPEN_SOURCE 700

#include "inputs.h"

#include "alloc_large.h"
#include "compact.h"
#include "engine_params.h"
#include "index_params.h"
#include "log.h"
#include "normalize.h"
#include "outfile.h"
#include "truth.h"
#include "try.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

lbk_status lbk_inputs_probe(const lbk_job *job, lbk_inputs_shape *shape)
{
    memset(shape, 0, sizeof *shape);
    /* Labels count only where votes are taken; a graph's queries are the
     * reference points. */
    const bool votes = job->task == LBK_TASK_CLASSIFY, graph = lbk_job_self_search(job);
    if (job->reference.path[0] == '\0') {
        shape->reference_rows = job->synthetic.points;
        shape->query_rows = graph ? job->synthetic.points : job->synthetic.queries;
        shape->dim = job->synthetic.dim;
        shape->reference_labels = shape->query_labels = votes;
        return LBK_OK;
    }
    lbk_dataset_info ref, query;
    LBK_TRY(lbk_dataset_probe(&job->reference, &ref));
    shape->reference_type = ref.type;
    if (graph) {
        shape->reference_rows = shape->query_rows = ref.rows;
        shape->dim = ref.dim;
        return LBK_OK;
    }
    LBK_TRY(lbk_dataset_probe(&job->query, &query));
    LBK_FAIL_IF(query.dim != ref.dim, LBK_ERR_INPUT,
                "%s: queries have dimension %d but the reference points (%s) have %d",
                job->query.path, query.dim, job->reference.path, ref.dim);
    shape->reference_rows = ref.rows;
    shape->query_rows = query.rows;
    shape->dim = ref.dim;
    shape->reference_labels = votes && ref.has_labels;
    shape->query_labels = votes && query.has_labels;
    shape->reference_targets = ref.has_targets;
    shape->query_targets = query.has_targets;
    return LBK_OK;
}

lbk_status lbk_inputs_probe_queries(const lbk_job *job, uint64_t reference_rows, int dim,
                                    lbk_inputs_shape *shape)
{
    memset(shape, 0, sizeof *shape);
    shape->reference_rows = reference_rows;
    shape->dim = dim;
    if (lbk_job_self_search(job)) {
        shape->query_rows = reference_rows;
        return LBK_OK;
    }
    if (job->reference.path[0] == '\0') {
        LBK_FAIL_IF(job->synthetic.dim != dim, LBK_ERR_INPUT,
                    "synthetic.dim: the queries have dimension %d but the saved index (%s) has "
                    "%d",
                    job->synthetic.dim, job->index.path, dim);
        shape->query_rows = job->synthetic.queries;
        shape->query_labels = job->task == LBK_TASK_CLASSIFY;
        return LBK_OK;
    }
    lbk_dataset_info query;
    LBK_TRY(lbk_dataset_probe(&job->query, &query));
    LBK_FAIL_IF(query.dim != dim, LBK_ERR_INPUT,
                "%s: queries have dimension %d but the saved index (%s) has %d", job->query.path,
                query.dim, job->index.path, dim);
    shape->query_rows = query.rows;
    shape->query_labels = job->task == LBK_TASK_CLASSIFY && query.has_labels;
    shape->query_targets = query.has_targets;
    return LBK_OK;
}

/* One output as the checks see it: where it lands (its directory's real
 * path and its name), and what is there now. */
typedef struct {
    const char *name; /* "output.neighbors" */
    const char *path;
    char target[PATH_MAX + LBK_PATH_MAX];
    bool exists;
    struct stat sb;
} output_target;

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A regular file the user protected: replacing it is a rename, which asks
 * only the directory's permission, so the file's own is checked here, as
 * rm and cp do before they remove or overwrite one. No write bit at all
 * (chmod a-w) protects it from root too, whom access(2) always lets write;
 * a file written in place through this process's stdout or stderr is not
 * replaced, and was opened by the shell already. */
static bool write_protected(const output_target *t)
{
    if (!S_ISREG(t->sb.st_mode) || lbk_outfile_is_own_stream(&t->sb))
        return false;
    return (t->sb.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || access(t->path, W_OK) != 0;
}

/* The directory must exist (and, for a file that will be renamed into
 * place, take new files): found now, not after all the work. */
static lbk_status resolve_target(output_target *t)
{
    char dir[LBK_PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(t->path, '/');
    const char *base = slash ? slash + 1 : t->path;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - t->path) : 1,
             slash ? (slash == t->path ? "/" : t->path) : ".");
    t->exists = stat(t->path, &t->sb) == 0;
    LBK_FAIL_IF((t->exists && S_ISDIR(t->sb.st_mode)) || base[0] == '\0' ||
                    strcmp(base, ".") == 0 || strcmp(base, "..") == 0,
                LBK_ERR_CONFIG, "%s: %s is a directory", t->path, t->name);
    LBK_FAIL_IF(!realpath(dir, real), LBK_ERR_CONFIG, "%s: %s: directory %s: %s", t->path,
                t->name, dir, strerror(errno));
    const bool in_place = t->exists && !S_ISREG(t->sb.st_mode);
    LBK_FAIL_IF(!in_place && access(real, W_OK | X_OK) != 0, LBK_ERR_CONFIG,
                "%s: %s: cannot create files in directory %s: %s", t->path, t->name, dir,
                strerror(errno));
    LBK_FAIL_IF(!in_place && t->exists && write_protected(t), LBK_ERR_CONFIG,
                "%s: %s: the existing file is write-protected (mode %04o), and lbknn does not "
                "replace it; make it writable (chmod u+w) or remove it",
                t->path, t->name, (unsigned)(t->sb.st_mode & 07777));
    snprintf(t->target, sizeof t->target, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
    return LBK_OK;
}

/* Two outputs in one file would be written over each other; however the
 * names are spelled ("out.csv", "./out.csv", a link). Only a character
 * device (/dev/null, a terminal) takes two outputs. */
static lbk_status check_distinct(const output_target *a, const output_target *b)
{
    const bool same = strcmp(a->target, b->target) == 0 ||
                      (a->exists && b->exists && same_file(&a->sb, &b->sb));
    LBK_FAIL_IF(same && !(a->exists && S_ISCHR(a->sb.st_mode)), LBK_ERR_CONFIG,
                "%s: %s and %s name the same file (%s)", b->path, a->name, b->name, a->path);
    return LBK_OK;
}

/* Results must never replace what the job reads: its inputs (the ground
 * truth included), or the job file itself. */
static lbk_status check_not_input(const lbk_job *job, const output_target *t)
{
    const char *const inputs[] = {
        job->source,         job->reference.path, job->reference.labels, job->reference.targets,
        job->query.path,     job->query.labels,   job->query.targets,    job->truth.neighbors,
        job->truth.distances};
    for (size_t j = 0; t->exists && j < sizeof inputs / sizeof *inputs; j++) {
        struct stat in;
        LBK_FAIL_IF(inputs[j][0] && stat(inputs[j], &in) == 0 && same_file(&in, &t->sb),
                    LBK_ERR_CONFIG, "%s: %s would overwrite the %s %s", t->path, t->name,
                    j == 0 ? "job file" : "input file", inputs[j]);
    }
    return LBK_OK;
}

/* What would otherwise show only at the final rename, after all the work,
 * or not at all (an input replaced by results). */
static lbk_status check_output_paths(const lbk_job *job)
{
#define OUTPUT_NAME_(name) "output." #name,
#define OUTPUT_PATH_(name) job->output.name,
    static const char *const names[] = {LBK_JOB_OUTPUT_LIST(OUTPUT_NAME_)};
    const char *const paths[] = {LBK_JOB_OUTPUT_LIST(OUTPUT_PATH_)};
#undef OUTPUT_NAME_
#undef OUTPUT_PATH_
    output_target t[LBK_JOB_OUTPUT_COUNT];
    int n = 0;
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        if (!paths[i][0])
            continue;
        t[n].name = names[i];
        t[n].path = paths[i];
        LBK_TRY(resolve_target(&t[n]));
        LBK_TRY(check_not_input(job, &t[n]));
        for (int j = 0; j < n; j++)
            LBK_TRY(check_distinct(&t[j], &t[n]));
        n++;
    }
    return LBK_OK;
}

lbk_status lbk_inputs_check(const lbk_job *job, const lbk_inputs_shape *shape)
{
    const char *where = job->reference.path[0] ? job->reference.path : "synthetic.points";
    LBK_FAIL_IF(shape->reference_rows == 0, LBK_ERR_INPUT, "%s: the reference set is empty",
                where);
    /* A radius search reads no k: any reference set of one point or more. */
    LBK_FAIL_IF(!lbk_job_radius_task(job) && !lbk_job_radius_votes(job) &&
                    (uint64_t)job->knn.k > shape->reference_rows,
                LBK_ERR_INPUT, "%s: knn.k = %d is larger than the %" PRIu64 " reference points",
                where, job->knn.k, shape->reference_rows);
    LBK_FAIL_IF(job->task == LBK_TASK_GRAPH && (uint64_t)job->knn.k >= shape->reference_rows,
                LBK_ERR_INPUT,
                "%s: knn.k = %d: task graph needs K other points, and each of the %" PRIu64
                " points has %" PRIu64,
                where, job->knn.k, shape->reference_rows, shape->reference_rows - 1);
    LBK_FAIL_IF(job->output.neighbors[0] && shape->reference_rows > (uint64_t)INT32_MAX &&
                    lbk_dataset_array_layout_of(job->output.neighbors) != LBK_ARRAY_HDF5,
                LBK_ERR_INPUT,
                "%s: %" PRIu64 " reference points do not fit the int32 ids of an .ivecs "
                "neighbours file",
                where, shape->reference_rows);
    const bool regress = job->task == LBK_TASK_REGRESS;
    LBK_FAIL_IF(regress && !shape->reference_targets, LBK_ERR_INPUT,
                "%s: task regress needs reference targets, and none were given", where);
    LBK_FAIL_IF(!regress && job->output.predictions[0] && !shape->reference_labels, LBK_ERR_INPUT,
                "%s: output.predictions needs reference labels, and none were given", where);
    LBK_FAIL_IF(job->output.probabilities[0] && !shape->reference_labels, LBK_ERR_INPUT,
                "%s: output.probabilities needs reference labels, and none were given", where);
    const char *lists[] = {job->output.neighbors, job->output.distances};
    for (int i = 0; i < 2; i++)
        LBK_FAIL_IF(lists[i][0] && lbk_dataset_array_layout_of(lists[i]) == LBK_ARRAY_BIN &&
                        shape->query_rows > UINT32_MAX,
                    LBK_ERR_INPUT,
                    "%s: %" PRIu64 " queries do not fit the uint32 row count of a big-ann file",
                    lists[i], shape->query_rows);
    LBK_TRY(lbk_truth_check(job, shape->query_rows));
    return check_output_paths(job);
}

lbk_status lbk_inputs_read_rows(const lbk_job *job, bool is_query, uint64_t lo, uint64_t hi,
                                lbk_dataset *out)
{
    if (job->reference.path[0] == '\0')
        LBK_TRY(lbk_synthetic_rows(&job->synthetic, is_query, lo, hi, out));
    else
        LBK_TRY(lbk_dataset_read(is_query ? &job->query : &job->reference, lo, hi, out));
    /* Compact rows (reference.type) are widened, exactly, for every search
     * that does not keep them compact; queries always are. */
    if (is_query || lbk_compact_job_why(job, out->dtype))
        LBK_TRY(lbk_dataset_widen(out));
    /* Once, here, for every rank and both sets: the rows every engine sees.
     * float16 rows kept compact are normalised on the fly by brute force,
     * to these values bit for bit (src/engines/brute_scale.h); the index
     * normalises them here too if it widens them after all. */
    if (job->knn.metric == LBK_METRIC_COSINE && out->dtype == LBK_DTYPE_FLOAT32)
        lbk_normalize_rows(out->points, out->rows, out->dim);
    return LBK_OK;
}

lbk_status lbk_inputs_read_targets(const lbk_job *job, bool is_query, uint64_t lo, uint64_t hi,
                                   double *targets)
{
    return lbk_dataset_read_targets(is_query ? &job->query : &job->reference, lo, hi, targets);
}

const char *lbk_inputs_name(const lbk_job *job, bool is_query)
{
    if (is_query && lbk_job_self_search(job))
        return "the reference points themselves";
    /* Without reference.path both sets are synthetic, whatever query.path says. */
    if (job->reference.path[0] == '\0')
        return "built-in synthetic blobs";
    return is_query ? job->query.path : job->reference.path;
}

/* Every target read, which is what checks their values. */
static lbk_status check_targets(const lbk_job *job, const lbk_inputs_shape *shape)
{
    const bool has[2] = {shape->reference_targets, shape->query_targets};
    const uint64_t rows[2] = {shape->reference_rows, shape->query_rows};
    lbk_status st = LBK_OK;
    for (int q = 0; q < 2 && st == LBK_OK; q++) {
        if (!has[q])
            continue;
        double *t = lbk_alloc_large_logged(rows[q], sizeof *t, "targets", &st);
        if (st == LBK_OK)
            st = lbk_inputs_read_targets(job, q == 1, 0, rows[q], t);
        lbk_alloc_large_free(t);
    }
    return st;
}

static void print_check(const lbk_job *job, const lbk_inputs_shape *shape,
                        const lbk_dataset *query)
{
    char shown[4096];
    printf("%s: OK\n", lbk_log_shown(job->source, shown, sizeof shown));
    printf("  reference  %" PRIu64 " x %d%s%s%s%s  (%s)\n", shape->reference_rows, shape->dim,
           shape->reference_type != LBK_DTYPE_FLOAT32 ? ", " : "",
           shape->reference_type != LBK_DTYPE_FLOAT32 ? lbk_dtype_name(shape->reference_type)
                                                      : "",
           shape->reference_labels ? ", labelled" : ", no labels",
           shape->reference_targets ? ", targets" : "",
           lbk_log_shown(lbk_inputs_name(job, false), shown, sizeof shown));
    printf("  queries    %" PRIu64 " x %d%s%s  (%s)\n", shape->query_rows, shape->dim,
           query->labels ? ", labelled" : ", no labels", shape->query_targets ? ", targets" : "",
           lbk_log_shown(lbk_inputs_name(job, true), shown, sizeof shown));
    const char *why = "";
    lbk_index_params index;
    lbk_index_params_from_job(job, &index);
    lbk_engine_params params;
    lbk_engine_params_from_index(&index, NULL, &params);
    const lbk_engine engine =
        lbk_engine_resolve(&params, shape->dim, shape->reference_rows, &why);
    printf("  knn        k=%d metric=%s weights=%s engine=%s (%s)\n", job->knn.k,
           lbk_metric_name(job->knn.metric), lbk_weights_name(job->knn.weights),
           lbk_engine_name(engine), why);
}

lbk_status lbk_inputs_check_command(const lbk_job *job)
{
    lbk_status st;
    lbk_inputs_shape shape;
    lbk_dataset ref = {0}, query = {0};
    LBK_TRY(lbk_inputs_probe(job, &shape));
    LBK_TRY(lbk_inputs_check(job, &shape));
    /* Reading everything is what validates every value (NaN, ragged rows). */
    LBK_TRY_GOTO(st, lbk_inputs_read_rows(job, false, 0, shape.reference_rows, &ref));
    if (!lbk_job_self_search(job))
        LBK_TRY_GOTO(st, lbk_inputs_read_rows(job, true, 0, shape.query_rows, &query));
    LBK_TRY_GOTO(st, check_targets(job, &shape));
    print_check(job, &shape, &query);
cleanup:
    lbk_dataset_free(&ref);
    lbk_dataset_free(&query);
    return st;
}
