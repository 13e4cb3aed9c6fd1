/* lbknn: command line. Only this file turns a status into an exit code. */
#include "collective.h"
#include "job.h"
#include "dataset.h"
#include "device.h"
#include "log.h"
#include "run.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SETS 256

static const char usage_text[] =
    "Usage: lbknn COMMAND [ARGS]\n"
    "\n"
    "Exact k-nearest-neighbour classification on OpenCL devices, across MPI ranks.\n"
    "\n"
    "Commands:\n"
    "  run [JOB.yaml] [--set KEY=VALUE]... [--progress] [--quiet]\n"
    "        Run a job; without JOB.yaml, the built-in default job (synthetic data).\n"
    "        Under mpirun or srun, every rank takes a shard of the reference points.\n"
    "  check [JOB.yaml] [--set KEY=VALUE]...\n"
    "        Validate the job and read its inputs completely, without computing.\n"
    "  generate DIR [--points N] [--queries N] [--dim D] [--classes C] [--seed S]\n"
    "           [--spread X] [--format fvecs|bvecs|csv|idx]\n"
    "        Write a seeded labelled synthetic data set (Gaussian blobs) and a job\n"
    "        file DIR/job.yaml that classifies its queries.\n"
    "  devices [--type gpu|cpu|any]\n"
    "        List OpenCL platforms and devices and the one a run would pick.\n"
    "\n"
    "Options:\n"
    "  --set KEY=VALUE  override a job key, e.g. --set knn.k=10 --set knn.engine=brute\n"
    "  --progress       show progress on stderr even when it is not a terminal\n"
    "  -q, --quiet      print nothing but errors\n"
    "  -h, --help       show this help;   -V, --version  show the version\n"
    "\n"
    "Exit status: 0 success, 2 bad usage, job file or input data, 1 runtime failure.\n"
    "Job keys: see configs/README.md (installed under share/lbknn/configs).\n";

static void usage(FILE *out) { fputs(usage_text, out); }

static lbk_status usage_error(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    lbk_error("%s (see 'lbknn --help')", msg);
    return LBK_ERR_USAGE;
}

typedef struct {
    const char *job_path;
    const char *sets[MAX_SETS];
    int nsets;
    bool progress, quiet;
} job_args;

static lbk_status parse_job_args(int argc, char **argv, bool allow_progress, job_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--set") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs KEY=VALUE", arg);
            if (a->nsets == MAX_SETS)
                return usage_error("too many %s options", arg);
            a->sets[a->nsets++] = argv[++i];
        } else if (strncmp(arg, "--set=", 6) == 0) {
            if (a->nsets == MAX_SETS)
                return usage_error("too many %s options", "--set");
            a->sets[a->nsets++] = arg + 6;
        } else if (allow_progress && strcmp(arg, "--progress") == 0) {
            a->progress = true;
        } else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            a->quiet = true;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return usage_error("unknown option '%s'", arg);
        } else if (a->job_path) {
            return usage_error("more than one job file given ('%s')", arg);
        } else {
            a->job_path = arg;
        }
    }
    return LBK_OK;
}

/* Load (or default) the job, apply overrides, validate. */
static lbk_status load_job(const job_args *a, lbk_job *job)
{
    lbk_status st = LBK_OK;
    lbk_job_defaults(job);
    if (a->job_path && (st = lbk_job_load(a->job_path, job)) != LBK_OK)
        return st;
    for (int i = 0; i < a->nsets; i++)
        if ((st = lbk_job_set(job, a->sets[i])) != LBK_OK)
            return st;
    return lbk_job_validate(job);
}

/* Before any device is opened: PoCL reads POCL_MAX_PTHREAD_COUNT when its
 * platform starts. A value the user set wins (they may know better: SMT, or
 * a deliberate overlap). */
static void share_cpu_threads(const lbk_comm *comm)
{
    if (getenv("POCL_MAX_PTHREAD_COUNT"))
        return;
    const long share = lbk_node_core_share(comm);
    if (share <= 0)
        return;   /* PoCL's own default is already right */
    char value[32];
    snprintf(value, sizeof value, "%ld", share);
    if (setenv("POCL_MAX_PTHREAD_COUNT", value, 0) != 0)
        lbk_warn("cannot set POCL_MAX_PTHREAD_COUNT=%s; CPU threads may oversubscribe", value);
}

static lbk_status cmd_run(int argc, char **argv)
{
    job_args a;
    lbk_comm comm;
    lbk_status st = parse_job_args(argc, argv, true, &a);
    if (st != LBK_OK)
        return st;
    lbk_log_set_quiet(a.quiet);
    if ((st = lbk_dist_init(NULL, NULL)) != LBK_OK)
        return st;
    if ((st = lbk_comm_init(&comm)) != LBK_OK) {
        lbk_dist_finalize();
        return st;
    }
    share_cpu_threads(&comm);
    lbk_job *job = calloc(1, sizeof *job);
    lbk_status load = LBK_OK;
    if (!job) {
        lbk_error("out of host memory");
        load = LBK_ERR_NOMEM;
    } else if (comm.rank == 0) {
        load = load_job(&a, job);
    }
    if (job) {
        const lbk_run_options options = {
            .progress = !a.quiet && (a.progress || isatty(STDERR_FILENO)),
        };
        st = lbk_run(&comm, load, job, &options);
    } else {
        st = lbk_agree(&comm, load);
    }
    free(job);
    lbk_comm_free(&comm);
    lbk_dist_finalize();
    return st;
}

static lbk_status cmd_check(int argc, char **argv)
{
    job_args a;
    lbk_job *job = NULL;
    lbk_status st = parse_job_args(argc, argv, false, &a);
    if (st != LBK_OK)
        goto cleanup;
    lbk_log_set_quiet(a.quiet);
    job = calloc(1, sizeof *job);
    if (!job) {
        lbk_error("out of host memory");
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    if ((st = load_job(&a, job)) != LBK_OK)
        goto cleanup;
    st = lbk_check(job);
cleanup:
    free(job);
    return st;
}

static lbk_status parse_u64(const char *opt, const char *value, uint64_t min, uint64_t max,
                            uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(value, &end, 10);
    if (errno || !end || *end || value[0] == '-' || value[0] == '\0' || v < min || v > max) {
        lbk_error("%s %s: expected an integer from %" PRIu64 " to %" PRIu64, opt, value, min, max);
        return LBK_ERR_USAGE;
    }
    *out = v;
    return LBK_OK;
}

static lbk_status write_generated(const char *dir, const char *name, lbk_format format,
                                  const lbk_dataset *d, FILE *job, bool is_query)
{
    static const char *const ext[] = {"", "fvecs", "ivecs", "bvecs", "csv", "idx", "txt"};
    char points[LBK_PATH_MAX], labels[LBK_PATH_MAX];
    lbk_status st;
    snprintf(points, sizeof points, "%s/%s.%s", dir, name, ext[format]);
    if ((st = lbk_write_points(points, format, format == LBK_FORMAT_CSV ? d : &(lbk_dataset){
        .rows = d->rows, .dim = d->dim, .first_row = 0, .points = d->points, .labels = NULL})) != LBK_OK)
        return st;
    fprintf(job, "%s:\n  path: %s.%s\n", is_query ? "query" : "reference", name, ext[format]);
    if (format == LBK_FORMAT_CSV) {
        fprintf(job, "  label_column: %d\n  header: false\n", d->dim);
        return LBK_OK;
    }
    const lbk_format lf = format == LBK_FORMAT_IDX ? LBK_FORMAT_IDX : LBK_FORMAT_IVECS;
    snprintf(labels, sizeof labels, "%s/%s-labels.%s", dir, name, ext[lf]);
    if ((st = lbk_write_labels(labels, lf, d->labels, d->rows)) != LBK_OK)
        return st;
    fprintf(job, "  labels: %s-labels.%s\n", name, ext[lf]);
    return LBK_OK;
}

static lbk_status cmd_generate(int argc, char **argv)
{
    lbk_status st = LBK_OK;
    lbk_job defaults;
    lbk_dataset ref = {0}, query = {0};
    FILE *job = NULL;
    const char *dir = NULL;
    lbk_format format = LBK_FORMAT_FVECS;
    char job_path[LBK_PATH_MAX];
    lbk_job_defaults(&defaults);
    lbk_synthetic_spec spec = defaults.synthetic;
    for (int i = 0; i < argc && st == LBK_OK; i++) {
        const char *opt = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t v = 0;
        if (opt[0] != '-') {
            if (dir) {
                st = usage_error("more than one output directory given ('%s')", opt);
                break;
            }
            dir = opt;
            continue;
        }
        if (!val) {
            st = usage_error("%s needs a value", opt);
            break;
        }
        i++;
        if (strcmp(opt, "--points") == 0) {
            if ((st = parse_u64(opt, val, 1, UINT64_C(1) << 40, &v)) == LBK_OK)
                spec.points = v;
        } else if (strcmp(opt, "--queries") == 0) {
            if ((st = parse_u64(opt, val, 1, UINT64_C(1) << 40, &v)) == LBK_OK)
                spec.queries = v;
        } else if (strcmp(opt, "--dim") == 0) {
            if ((st = parse_u64(opt, val, 1, 4096, &v)) == LBK_OK)
                spec.dim = (int)v;
        } else if (strcmp(opt, "--classes") == 0) {
            if ((st = parse_u64(opt, val, 1, 100000, &v)) == LBK_OK)
                spec.classes = (int)v;
        } else if (strcmp(opt, "--seed") == 0) {
            if ((st = parse_u64(opt, val, 0, UINT64_MAX, &v)) == LBK_OK)
                spec.seed = v;
        } else if (strcmp(opt, "--spread") == 0) {
            char *end = NULL;
            spec.spread = strtod(val, &end);
            if (!end || *end || !(spec.spread > 0) || spec.spread > 1e30)
                st = usage_error("--spread %s: expected a positive number", val);
        } else if (strcmp(opt, "--format") == 0) {
            if (strcmp(val, "fvecs") == 0)
                format = LBK_FORMAT_FVECS;
            else if (strcmp(val, "bvecs") == 0)
                format = LBK_FORMAT_BVECS;
            else if (strcmp(val, "csv") == 0)
                format = LBK_FORMAT_CSV;
            else if (strcmp(val, "idx") == 0)
                format = LBK_FORMAT_IDX;
            else
                st = usage_error("--format %s: expected fvecs, bvecs, csv or idx", val);
        } else {
            st = usage_error("unknown option '%s'", opt);
        }
    }
    if (st != LBK_OK)
        goto cleanup;
    if (!dir) {
        st = usage_error("%s", "generate needs an output directory");
        goto cleanup;
    }
    if (spec.classes > 0 && (uint64_t)spec.classes > spec.points) {
        st = usage_error("%s", "--classes must not exceed --points");
        goto cleanup;
    }
    /* The longest file written; a cut path would write the data under a
     * name that job.yaml does not use. */
    if (strlen(dir) + sizeof "/reference-labels.ivecs" > LBK_PATH_MAX) {
        st = usage_error("output directory name too long: '%.64s...'", dir);
        goto cleanup;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        lbk_error("%s: cannot create directory: %s", dir, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
    if ((st = lbk_synthetic_rows(&spec, false, 0, spec.points, &ref)) != LBK_OK)
        goto cleanup;
    if ((st = lbk_synthetic_rows(&spec, true, 0, spec.queries, &query)) != LBK_OK)
        goto cleanup;
    if (format == LBK_FORMAT_BVECS) {
        /* bvecs holds bytes: clamp and round the blobs into 0..255. */
        lbk_dataset *sets[] = {&ref, &query};
        for (int s = 0; s < 2; s++)
            for (uint64_t i = 0; i < sets[s]->rows * (uint64_t)sets[s]->dim; i++) {
                const float x = roundf(sets[s]->points[i] * 12.0f + 64.0f);
                sets[s]->points[i] = x < 0 ? 0 : x > 255 ? 255 : x;
            }
    }
    snprintf(job_path, sizeof job_path, "%s/job.yaml", dir);
    job = fopen(job_path, "w");
    if (!job) {
        lbk_error("%s: cannot create: %s", job_path, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
    fprintf(job, "# Written by lbknn generate: %" PRIu64 " reference and %" PRIu64
                 " query points, %d dims, %d classes, seed %" PRIu64 ", spread %g\n",
            spec.points, spec.queries, spec.dim, spec.classes, spec.seed, spec.spread);
    if ((st = write_generated(dir, "reference", format, &ref, job, false)) != LBK_OK)
        goto cleanup;
    if ((st = write_generated(dir, "query", format, &query, job, true)) != LBK_OK)
        goto cleanup;
    fprintf(job, "knn: {k: 5, metric: l2, weights: uniform, engine: auto}\n");
    if (fclose(job) != 0) {
        job = NULL;
        lbk_error("%s: write failed: %s", job_path, strerror(errno));
        st = LBK_ERR_IO;
        goto cleanup;
    }
    job = NULL;
    if (!lbk_log_is_quiet())
        printf("wrote %s (run it with: lbknn run %s)\n", job_path, job_path);
cleanup:
    if (job)
        fclose(job);
    lbk_dataset_free(&ref);
    lbk_dataset_free(&query);
    return st;
}

static lbk_status cmd_devices(int argc, char **argv)
{
    lbk_device_request req = {LBK_DEVICE_ANY, 0, NULL, 0};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            const char *t = argv[++i];
            if (strcmp(t, "gpu") == 0)
                req.type = LBK_DEVICE_GPU;
            else if (strcmp(t, "cpu") == 0)
                req.type = LBK_DEVICE_CPU;
            else if (strcmp(t, "any") == 0)
                req.type = LBK_DEVICE_ANY;
            else
                return usage_error("--type %s: expected gpu, cpu or any", t);
        } else {
            return usage_error(strcmp(argv[i], "--type") == 0 ? "%s needs gpu, cpu or any"
                                                               : "unknown argument '%s' for devices",
                               argv[i]);
        }
    }
    return lbk_device_list(stdout, &req);
}

int main(int argc, char **argv)
{
    lbk_status st;
    if (argc < 2) {
        usage(stderr);
        return lbk_status_exit_code(LBK_ERR_USAGE);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("lbknn %s\n", LBK_VERSION);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    if (strcmp(cmd, "run") == 0)
        st = cmd_run(argc - 2, argv + 2);
    else if (strcmp(cmd, "check") == 0)
        st = cmd_check(argc - 2, argv + 2);
    else if (strcmp(cmd, "generate") == 0)
        st = cmd_generate(argc - 2, argv + 2);
    else if (strcmp(cmd, "devices") == 0)
        st = cmd_devices(argc - 2, argv + 2);
    else
        st = usage_error("unknown command '%s'", cmd);
    return lbk_status_exit_code(st);
}
