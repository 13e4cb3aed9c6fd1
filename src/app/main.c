/* lbknn: command line. Only this file turns a status into an exit code. */
#include "checkpoint.h"
#include "comm.h"
#include "cpu_threads.h"
#include "device.h"
#include "generate.h"
#include "inputs.h"
#include "job.h"
#include "launch.h"
#include "log.h"
#include "outfile.h"
#include "rlimit.h"
#include "run.h"
#include "try.h"
#include "tune.h"
#include "tune_cache.h"
#include "usage.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 256
/* Limits below which MPI or the OpenCL runtime cannot start and says so in
 * pages of messages of its own (measured: Open MPI's singleton start and
 * PoCL fail below about 550 MiB of address space; PMIx's store below 4 MiB
 * of file size). */
#define START_ADDRESS_SPACE (UINT64_C(640) << 20)
#define START_FILE_SIZE (UINT64_C(16) << 20)

/* `lbknn tune`'s cache directory (tune_cache.h: lbk_tune_cache_dir), ""
 * when there is none. */
static char tune_cache_dir[4096];

typedef struct {
    const char *job_path;
    const char *sets[MAX_SETS];
    int nsets;
    bool progress, quiet, resume;
} job_args;

static lbk_status parse_job_args(int argc, char **argv, bool allow_progress, job_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--set") == 0) {
            if (i + 1 >= argc)
                return lbk_usage_error("%s needs KEY=VALUE", arg);
            if (a->nsets == MAX_SETS)
                return lbk_usage_error("too many %s options", arg);
            a->sets[a->nsets++] = argv[++i];
        } else if (strncmp(arg, "--set=", 6) == 0) {
            if (a->nsets == MAX_SETS)
                return lbk_usage_error("too many %s options", "--set");
            a->sets[a->nsets++] = arg + 6;
        } else if (allow_progress && strcmp(arg, "--progress") == 0) {
            a->progress = true;
        } else if (allow_progress && strcmp(arg, "--resume") == 0) {
            a->resume = true;
        } else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            a->quiet = true;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return lbk_usage_error("unknown option '%s'", arg);
        } else if (a->job_path) {
            return lbk_usage_error("more than one job file given ('%s')", arg);
        } else {
            a->job_path = arg;
        }
    }
    return LBK_OK;
}

/* Load (or default) the job, apply overrides, validate. */
static lbk_status load_job(const job_args *a, lbk_job *job)
{
    lbk_job_defaults(job);
    if (a->job_path)
        LBK_TRY(lbk_job_load(a->job_path, job));
    for (int i = 0; i < a->nsets; i++)
        LBK_TRY(lbk_job_set(job, a->sets[i]));
    return lbk_job_validate(job);
}

/* Every rank: rank 0 loads the job, and lbk_run hands it to the others. */
static lbk_status run_on_every_rank(const lbk_comm *comm, const job_args *a, bool build_only)
{
    const lbk_cpu_threads_source threads = lbk_cpu_threads_apply(comm);
    const lbk_run_options options = {
        .progress = !a->quiet && (a->progress || isatty(STDERR_FILENO)),
        .cpu_threads = threads,
        .tune_cache_dir = tune_cache_dir,
        .build_only = build_only,
        .resume = a->resume,
    };
    lbk_job *job = calloc(1, sizeof *job);
    if (!job) {
        lbk_error("out of host memory");
        /* The other ranks are in lbk_run's first agreement. */
        return lbk_comm_agree(comm, LBK_ERR_NOMEM);
    }
    const lbk_status load = comm->rank == 0 ? load_job(a, job) : LBK_OK;
    const lbk_status st = lbk_run(comm, load, job, &options);
    free(job);
    return st;
}

/* `run`, and `build` (build_only: the index saved to index.path, no
 * search). */
static lbk_status cmd_run(int argc, char **argv, bool build_only)
{
    job_args a;
    lbk_comm comm;
    LBK_TRY(parse_job_args(argc, argv, true, &a));
    lbk_log_set_quiet(a.quiet);
    lbk_checkpoint_catch_early();
    /* Before MPI, whose failures under too small a limit are pages long. */
    LBK_TRY(lbk_rlimit_as_require(START_ADDRESS_SPACE, "starting MPI and OpenCL"));
    LBK_TRY(lbk_rlimit_fsize_require(START_FILE_SIZE, "starting MPI"));
    /* A process no launcher started runs alone and never starts MPI, which
     * gives it the same results (one rank's collectives are identities)
     * and saves Open MPI's singleton start; LBKNN_MPI=1 starts it anyway. */
    const char *force = getenv("LBKNN_MPI");
    const bool with_mpi = lbk_comm_launched() || (force && strcmp(force, "1") == 0);
    if (with_mpi)
        LBK_TRY(lbk_comm_mpi_init(NULL, NULL));
    /* After MPI_Init, so that no handler of its own replaces ours. */
    lbk_cleanup_handle_signals();
    lbk_status st = with_mpi ? lbk_comm_init(&comm) : lbk_comm_init_alone(&comm);
    if (st == LBK_OK) {
        /* Before rank 0's job is broadcast and trusted by every rank. */
        st = lbk_launch_agree(&comm, build_only ? "build" : "run", argc, argv, a.job_path);
        if (st == LBK_OK)
            st = run_on_every_rank(&comm, &a, build_only);
        lbk_comm_free(&comm);
    }
    if (with_mpi)
        lbk_comm_mpi_finalize();
    return st;
}

static lbk_status cmd_check(int argc, char **argv)
{
    job_args a;
    LBK_TRY(parse_job_args(argc, argv, false, &a));
    lbk_log_set_quiet(a.quiet);
    lbk_job *job = calloc(1, sizeof *job);
    LBK_FAIL_IF(!job, LBK_ERR_NOMEM, "out of host memory");
    lbk_status st = load_job(&a, job);
    if (st == LBK_OK)
        st = lbk_inputs_check_command(job);
    free(job);
    return st;
}

static lbk_status cmd_generate(int argc, char **argv)
{
    lbk_cleanup_handle_signals();
    return lbk_generate(argc, argv);
}

static lbk_status cmd_devices(int argc, char **argv)
{
    lbk_device_request req = {.type = LBK_DEVICE_ANY};
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
                return lbk_usage_error("--type %s: expected gpu, cpu or any", t);
        } else {
            return lbk_usage_error(strcmp(argv[i], "--type") == 0
                                       ? "%s needs gpu, cpu or any"
                                       : "unknown argument '%s' for devices",
                                   argv[i]);
        }
    }
    return lbk_device_list(stdout, &req);
}

static lbk_status cmd_keys(int argc, char **argv)
{
    if (argc > 0)
        return lbk_usage_error("unknown argument '%s' for keys", argv[0]);
    lbk_job_print_keys(stdout);
    return LBK_OK;
}

int main(int argc, char **argv)
{
    lbk_status st;
    if (argc < 2) {
        lbk_usage(stderr);
        return lbk_status_exit_code(LBK_ERR_USAGE);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        lbk_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        lbk_version_print(stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            lbk_usage(stdout);
            return 0;
        }
    lbk_tune_cache_dir(tune_cache_dir, sizeof tune_cache_dir);
    /* For the kernels' developers: the OpenCL compiler's warnings. */
    const char *warnings = getenv("LBKNN_KERNEL_WARNINGS");
    lbk_device_show_compiler_warnings(warnings && strcmp(warnings, "1") == 0);
    if (strcmp(cmd, "run") == 0)
        st = cmd_run(argc - 2, argv + 2, false);
    else if (strcmp(cmd, "build") == 0)
        st = cmd_run(argc - 2, argv + 2, true);
    else if (strcmp(cmd, "tune") == 0)
        st = lbk_tune_command(argc - 2, argv + 2, tune_cache_dir);
    else if (strcmp(cmd, "check") == 0)
        st = cmd_check(argc - 2, argv + 2);
    else if (strcmp(cmd, "generate") == 0)
        st = cmd_generate(argc - 2, argv + 2);
    else if (strcmp(cmd, "devices") == 0)
        st = cmd_devices(argc - 2, argv + 2);
    else if (strcmp(cmd, "keys") == 0)
        st = cmd_keys(argc - 2, argv + 2);
    else
        st = lbk_usage_error("unknown command '%s'", cmd);
    return lbk_status_exit_code(st);
}
