#include "generate.h"

#include "dataset.h"
#include "job.h"
#include "log.h"
#include "try.h"
#include "usage.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *dir;
    lbk_format format;
    lbk_synthetic_spec spec;
} generate_args;

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
    if (strcmp(val, "fvecs") == 0)
        *format = LBK_FORMAT_FVECS;
    else if (strcmp(val, "bvecs") == 0)
        *format = LBK_FORMAT_BVECS;
    else if (strcmp(val, "csv") == 0)
        *format = LBK_FORMAT_CSV;
    else if (strcmp(val, "idx") == 0)
        *format = LBK_FORMAT_IDX;
    else if (strcmp(val, "npy") == 0)
        *format = LBK_FORMAT_NPY;
    else if (strcmp(val, "fbin") == 0)
        *format = LBK_FORMAT_FBIN;
    else
        return lbk_usage_error("--format %s: expected fvecs, bvecs, csv, idx, npy or fbin", val);
    return LBK_OK;
}

/* One "--option value" pair. */
static lbk_status parse_option(const char *opt, const char *val, generate_args *a)
{
    lbk_synthetic_spec *spec = &a->spec;
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
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (opt[0] != '-') {
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

/* One set's points (and labels: a CSV column, or a file of their own) and
 * its section of job.yaml. */
static lbk_status write_set(const char *dir, const char *name, lbk_format format,
                            const lbk_dataset *d, FILE *job, bool is_query)
{
    static const char *const ext[] = {"",    "fvecs", "ivecs", "bvecs", "csv",  "idx",
                                      "txt", "npy",   "fbin",  "u8bin", "i8bin", "ibin"};
    char points[LBK_PATH_MAX], labels[LBK_PATH_MAX];
    snprintf(points, sizeof points, "%s/%s.%s", dir, name, ext[format]);
    LBK_TRY(lbk_write_points(points, format, format == LBK_FORMAT_CSV ? d : &(lbk_dataset){
        .rows = d->rows, .dim = d->dim, .first_row = 0, .points = d->points, .labels = NULL}));
    fprintf(job, "%s:\n  path: %s.%s\n", is_query ? "query" : "reference", name, ext[format]);
    if (format == LBK_FORMAT_CSV) {
        fprintf(job, "  label_column: %d\n  header: false\n", d->dim);
        return LBK_OK;
    }
    const lbk_format lf = format == LBK_FORMAT_IDX    ? LBK_FORMAT_IDX
                          : format == LBK_FORMAT_NPY  ? LBK_FORMAT_NPY
                          : format == LBK_FORMAT_FBIN ? LBK_FORMAT_IBIN
                                                      : LBK_FORMAT_IVECS;
    snprintf(labels, sizeof labels, "%s/%s-labels.%s", dir, name, ext[lf]);
    LBK_TRY(lbk_write_labels(labels, lf, d->labels, d->rows));
    fprintf(job, "  labels: %s-labels.%s\n", name, ext[lf]);
    return LBK_OK;
}

/* The data files and job.yaml, which names them relative to itself. */
static lbk_status write_job(const generate_args *a, const char *job_path,
                            const lbk_dataset *ref, const lbk_dataset *query)
{
    lbk_status st;
    const lbk_synthetic_spec *spec = &a->spec;
    FILE *job = fopen(job_path, "w");
    LBK_FAIL_IF(!job, LBK_ERR_IO, "%s: cannot create: %s", job_path, strerror(errno));
    fprintf(job, "# Written by lbknn generate: %" PRIu64 " reference and %" PRIu64
                 " query points, %d dims, %d classes, seed %" PRIu64 ", spread %g\n",
            spec->points, spec->queries, spec->dim, spec->classes, spec->seed, spec->spread);
    LBK_TRY_GOTO(st, write_set(a->dir, "reference", a->format, ref, job, false));
    LBK_TRY_GOTO(st, write_set(a->dir, "query", a->format, query, job, true));
    fprintf(job, "knn: {k: 5, metric: l2, weights: uniform, engine: auto}\n");
    const int closed = fclose(job);
    job = NULL;
    if (closed != 0) {
        lbk_error("%s: write failed: %s", job_path, strerror(errno));
        st = LBK_ERR_IO;
    }

cleanup:
    if (job)
        fclose(job);
    return st;
}

lbk_status lbk_generate(int argc, char **argv)
{
    lbk_status st;
    generate_args a;
    lbk_dataset ref = {0}, query = {0};
    char job_path[LBK_PATH_MAX];
    LBK_TRY(parse_generate_args(argc, argv, &a));
    LBK_FAIL_IF(mkdir(a.dir, 0755) != 0 && errno != EEXIST, LBK_ERR_IO,
                "%s: cannot create directory: %s", a.dir, strerror(errno));
    LBK_TRY_GOTO(st, generate_sets(&a, &ref, &query));
    snprintf(job_path, sizeof job_path, "%s/job.yaml", a.dir);
    LBK_TRY_GOTO(st, write_job(&a, job_path, &ref, &query));
    if (!lbk_log_is_quiet())
        printf("wrote %s (run it with: lbknn run %s)\n", job_path, job_path);

cleanup:
    lbk_dataset_free(&ref);
    lbk_dataset_free(&query);
    return st;
}
