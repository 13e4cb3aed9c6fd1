#include "generate.h"

#include "dataset_read.h"
#include "job.h"
#include "log.h"
#include "outfile.h"
#include "try.h"
#include "usage.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *dir;
    lbk_format format;
    lbk_job_synthetic_spec spec;
    bool force; /* replace files that exist */
} generate_args;

/* What generate writes: the points and labels of both sets (labels in the
 * CSV itself, or a file of their own), then job.yaml, which names them.
 * They appear together, or none of them (outfile.h). */
enum { REF_POINTS, REF_LABELS, QUERY_POINTS, QUERY_LABELS, JOB_FILE, FILE_COUNT };

typedef struct {
    lbk_outfile files[FILE_COUNT];
    bool wanted[FILE_COUNT];
} generated_files;

static lbk_status parse_u64(const char *opt, const char *value, uint64_t min, uint64_t max,
                            uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(value, &end, 10);
    LBK_FAIL_IF(errno || !end || *end || value[0] == '-' || value[0] == '\0' || v < min ||
                    v > max,
                LBK_ERR_USAGE, "%s %s: expected an integer from %" PRIu64 " to %" PRIu64, opt,
                value, min, max);
    *out = v;
    return LBK_OK;
}

static lbk_status parse_format(const char *val, lbk_format *format)
{
    lbk_format f = LBK_FORMAT_AUTO;
    if (lbk_format_parse(val, &f) && lbk_dataset_format_generated(f)) {
        *format = f;
        return LBK_OK;
    }
    char names[128], fmt[192];
    lbk_dataset_format_generated_names(", ", " or ", names, sizeof names);
    snprintf(fmt, sizeof fmt, "--format %%s: expected %s", names);
    return lbk_usage_error(fmt, val);
}

/* One "--option value" pair. */
static lbk_status parse_option(const char *opt, const char *val, generate_args *a)
{
    lbk_job_synthetic_spec *spec = &a->spec;
    uint64_t v = 0;
    if (strcmp(opt, "--points") == 0) {
        LBK_TRY(parse_u64(opt, val, 1, UINT64_C(1) << 40, &v));
        spec->points = v;
    } else if (strcmp(opt, "--queries") == 0) {
        LBK_TRY(parse_u64(opt, val, 1, UINT64_C(1) << 40, &v));
        spec->queries = v;
    } else if (strcmp(opt, "--dim") == 0) {
        LBK_TRY(parse_u64(opt, val, 1, 4096, &v));
        spec->dim = (int)v;
    } else if (strcmp(opt, "--classes") == 0) {
        LBK_TRY(parse_u64(opt, val, 1, 100000, &v));
        spec->classes = (int)v;
    } else if (strcmp(opt, "--seed") == 0) {
        LBK_TRY(parse_u64(opt, val, 0, UINT64_MAX, &v));
        spec->seed = v;
    } else if (strcmp(opt, "--spread") == 0) {
        char *end = NULL;
        spec->spread = strtod(val, &end);
        if (!end || *end || !(spec->spread > 0) || spec->spread > 1e30)
            return lbk_usage_error("--spread %s: expected a positive number", val);
    } else if (strcmp(opt, "--format") == 0) {
        return parse_format(val, &a->format);
    } else {
        return lbk_usage_error("unknown option '%s'", opt);
    }
    return LBK_OK;
}

static lbk_status parse_generate_args(int argc, char **argv, generate_args *a)
{
    lbk_job defaults;
    lbk_job_defaults(&defaults);
    a->dir = NULL;
    a->format = LBK_FORMAT_FVECS;
    a->spec = defaults.synthetic;
    a->force = false;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--force") == 0) {
            a->force = true;
        } else if (opt[0] != '-') {
            if (a->dir)
                return lbk_usage_error("more than one output directory given ('%s')", opt);
            a->dir = opt;
        } else if (i + 1 == argc) {
            return lbk_usage_error("%s needs a value", opt);
        } else {
            LBK_TRY(parse_option(opt, argv[++i], a));
        }
    }
    if (!a->dir)
        return lbk_usage_error("%s", "generate needs an output directory");
    if (a->spec.classes > 0 && (uint64_t)a->spec.classes > a->spec.points)
        return lbk_usage_error("%s", "--classes must not exceed --points");
    /* The longest file written; a cut path would write the data under a
     * name that job.yaml does not use. */
    if (strlen(a->dir) + sizeof "/reference-labels.ivecs" > LBK_PATH_MAX)
        return lbk_usage_error("output directory name too long: '%.64s...'", a->dir);
    return LBK_OK;
}

/* Both sets from the blobs; bvecs holds bytes, so its values are clamped and
 * rounded into 0..255. */
static lbk_status generate_sets(const generate_args *a, lbk_dataset *ref, lbk_dataset *query)
{
    LBK_TRY(lbk_synthetic_rows(&a->spec, false, 0, a->spec.points, ref));
    LBK_TRY(lbk_synthetic_rows(&a->spec, true, 0, a->spec.queries, query));
    if (a->format != LBK_FORMAT_BVECS)
        return LBK_OK;
    lbk_dataset *sets[] = {ref, query};
    for (int s = 0; s < 2; s++)
        for (uint64_t i = 0; i < sets[s]->rows * (uint64_t)sets[s]->dim; i++) {
            const float x = roundf(sets[s]->points[i] * 12.0f + 64.0f);
            sets[s]->points[i] = x < 0 ? 0 : x > 255 ? 255 : x;
        }
    return LBK_OK;
}

/* Labels go in the points' own family of formats. */
static lbk_format labels_format(lbk_format points)
{
    return points == LBK_FORMAT_IDX    ? LBK_FORMAT_IDX
           : points == LBK_FORMAT_NPY  ? LBK_FORMAT_NPY
           : points == LBK_FORMAT_FBIN ? LBK_FORMAT_IBIN
                                       : LBK_FORMAT_IVECS;
}

/* File i's name inside the directory. */
static void file_name(const generate_args *a, int i, char *out, size_t size)
{
    const char *set = i == REF_POINTS || i == REF_LABELS ? "reference" : "query";
    if (i == JOB_FILE)
        snprintf(out, size, "job.yaml");
    else if (i == REF_POINTS || i == QUERY_POINTS)
        snprintf(out, size, "%s%s", set, lbk_dataset_format_extension(a->format));
    else
        snprintf(out, size, "%s-labels%s", set,
                 lbk_dataset_format_extension(labels_format(a->format)));
}

/* Before anything is computed or written: a file that is there already
 * stays, unless --force says to replace it. */
static lbk_status plan_files(const generate_args *a, generated_files *g)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < FILE_COUNT; i++)
        g->files[i].fd = -1;
    for (int i = 0; i < FILE_COUNT; i++) {
        char name[64], path[LBK_PATH_MAX];
        struct stat sb;
        g->wanted[i] = a->format != LBK_FORMAT_CSV || (i != REF_LABELS && i != QUERY_LABELS);
        file_name(a, i, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", a->dir, name);
        snprintf(g->files[i].path, sizeof g->files[i].path, "%s", path);
        if (g->wanted[i] && !a->force && lstat(path, &sb) == 0)
            return lbk_usage_error("%s exists; 'generate --force' replaces it", path);
    }
    return LBK_OK;
}

/* One set's points and labels, each into its partial file. */
static lbk_status write_set(const generate_args *a, generated_files *g, const lbk_dataset *d,
                            bool is_query)
{
    lbk_outfile *points = &g->files[is_query ? QUERY_POINTS : REF_POINTS];
    lbk_outfile *labels = &g->files[is_query ? QUERY_LABELS : REF_LABELS];
    const bool csv = a->format == LBK_FORMAT_CSV;
    const lbk_dataset unlabelled = {
        .rows = d->rows, .dim = d->dim, .first_row = 0, .points = d->points, .labels = NULL};
    LBK_TRY(lbk_outfile_create(points, points->path, "generated points", false));
    LBK_TRY(lbk_outfile_close(points));
    LBK_TRY(lbk_dataset_write_points(lbk_outfile_write_path(points), a->format,
                                     csv ? d : &unlabelled));
    if (csv)
        return LBK_OK;
    LBK_TRY(lbk_outfile_create(labels, labels->path, "generated labels", false));
    LBK_TRY(lbk_outfile_close(labels));
    return lbk_dataset_write_labels(lbk_outfile_write_path(labels), labels_format(a->format),
                                    d->labels, d->rows);
}

/* One set's section of job.yaml. */
static void job_section(FILE *job, const generate_args *a, const lbk_dataset *d, bool is_query)
{
    char name[64];
    file_name(a, is_query ? QUERY_POINTS : REF_POINTS, name, sizeof name);
    fprintf(job, "%s:\n  path: %s\n", is_query ? "query" : "reference", name);
    if (a->format == LBK_FORMAT_CSV) {
        fprintf(job, "  label_column: %d\n  header: false\n", d->dim);
        return;
    }
    file_name(a, is_query ? QUERY_LABELS : REF_LABELS, name, sizeof name);
    fprintf(job, "  labels: %s\n", name);
}

/* job.yaml, which names the data files relative to itself. */
static lbk_status write_job(const generate_args *a, lbk_outfile *f, const lbk_dataset *ref,
                            const lbk_dataset *query)
{
    const lbk_job_synthetic_spec *spec = &a->spec;
    LBK_TRY(lbk_outfile_create(f, f->path, "the job file", false));
    LBK_TRY(lbk_outfile_close(f));
    FILE *job = fopen(lbk_outfile_write_path(f), "w");
    LBK_FAIL_IF(!job, LBK_ERR_IO, "%s: cannot write: %s", f->path, strerror(errno));
    fprintf(job,
            "# Written by lbknn generate: %" PRIu64 " reference and %" PRIu64
            " query points, %d dims, %d classes, seed %" PRIu64 ", spread %g\n",
            spec->points, spec->queries, spec->dim, spec->classes, spec->seed, spec->spread);
    job_section(job, a, ref, false);
    job_section(job, a, query, true);
    fprintf(job, "knn: {k: 5, metric: l2, weights: uniform, engine: auto}\n");
    /* A full disk often shows only at the final flush. */
    const bool failed = ferror(job) != 0;
    const int saved = errno;
    const int closed = fclose(job);
    LBK_FAIL_IF(failed || closed != 0, LBK_ERR_IO, "%s: write failed: %s",
                lbk_outfile_write_path(f), strerror(failed ? saved : errno));
    return LBK_OK;
}

static lbk_status write_all(const generate_args *a, generated_files *g)
{
    lbk_status st;
    lbk_dataset ref = {0}, query = {0};
    lbk_outfile *order[FILE_COUNT];
    int n = 0;
    LBK_TRY_GOTO(st, generate_sets(a, &ref, &query));
    LBK_TRY_GOTO(st, write_set(a, g, &ref, false));
    LBK_TRY_GOTO(st, write_set(a, g, &query, true));
    LBK_TRY_GOTO(st, write_job(a, &g->files[JOB_FILE], &ref, &query));
    /* job.yaml last: once it is there, so is everything it names. */
    for (int i = 0; i < FILE_COUNT; i++)
        if (g->wanted[i])
            order[n++] = &g->files[i];
    st = lbk_outfile_commit(order, n);
cleanup:
    lbk_dataset_free(&ref);
    lbk_dataset_free(&query);
    return st;
}

lbk_status lbk_generate(int argc, char **argv)
{
    generate_args a;
    generated_files g;
    LBK_TRY(parse_generate_args(argc, argv, &a));
    const bool made_dir = mkdir(a.dir, 0755) == 0;
    LBK_FAIL_IF(!made_dir && errno != EEXIST, LBK_ERR_IO, "%s: cannot create directory: %s",
                a.dir, strerror(errno));
    lbk_status st = plan_files(&a, &g);
    if (st == LBK_OK)
        st = write_all(&a, &g);
    if (st != LBK_OK) {
        for (int i = 0; i < FILE_COUNT; i++)
            lbk_outfile_discard(&g.files[i], true);
        if (made_dir)
            rmdir(a.dir); /* only if empty: never what was there */
        return st;
    }
    if (!lbk_log_is_quiet()) {
        char shown[4096];
        lbk_log_shown(g.files[JOB_FILE].path, shown, sizeof shown);
        printf("wrote %s (run it with: lbknn run %s)\n", shown, shown);
    }
    return LBK_OK;
}
