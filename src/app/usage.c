#include "usage.h"

#include "dataset.h"
#include "log.h"

/* The help, in two parts around the formats `generate --format` writes. */
static const char usage_head[] =
    "Usage: lbknn COMMAND [ARGS]\n"
    "\n"
    "Exact k-nearest-neighbour classification on OpenCL devices, across MPI ranks.\n"
    "\n"
    "Commands:\n"
    "  run [JOB.yaml] [--set KEY=VALUE]... [--progress] [--quiet] [--resume]\n"
    "        Run a job; without JOB.yaml, the built-in default job (synthetic data).\n"
    "        Under mpirun or srun, every rank takes a shard of the reference points;\n"
    "        started alone, lbknn runs as one rank without starting MPI.\n"
    "  build [JOB.yaml] [--set KEY=VALUE]... [--quiet]\n"
    "        Read the reference set, build the index and save it to index.path, for\n"
    "        `run` with index.path to load instead (on another rank count it is\n"
    "        regrouped and built again, about a fresh build's cost).\n"
    "  check [JOB.yaml] [--set KEY=VALUE]...\n"
    "        Validate the job and read its inputs completely, without computing.\n"
    "  generate DIR [--points N] [--queries N] [--dim D] [--classes C] [--seed S]\n"
    "           [--spread X] [--format ";
static const char usage_tail[] =
    "] [--force]\n"
    "        Write a seeded labelled synthetic data set (Gaussian blobs) and a job\n"
    "        file DIR/job.yaml that classifies its queries (--force: replace them).\n"
    "  devices [--type gpu|cpu|any]\n"
    "        List OpenCL platforms and devices and the one a run would pick.\n"
    "  tune [--type gpu|cpu|any] [--device N]\n"
    "        Measure the device's fastest kernel parameters (tens of seconds) and\n"
    "        cache them for later runs ($XDG_CACHE_HOME/lbknn or ~/.cache/lbknn).\n"
    "  keys\n"
    "        List every job key with the values it takes, for --set and job files.\n"
    "\n"
    "Options:\n"
    "  --set KEY=VALUE  override a job key, e.g. --set knn.k=10 --set knn.engine=brute\n"
    "  --progress       show progress on stderr even when it is not a terminal\n"
    "  --resume         continue after run.checkpoint's last batch (docs/user-guide.md)\n"
    "  -q, --quiet      print nothing but errors\n"
    "  -h, --help       show this help\n"
    "  -V, --version    show the version, the commit and the libraries found\n"
    "\n"
    "Exit status: 0 success, 2 bad usage, job file or input data, 1 runtime failure,\n"
    "3 stopped with a checkpoint (SIGUSR1, run.max_hours), 128+N stopped by signal N.\n"
    "Job keys: `lbknn keys` lists them; configs/README.md (installed under\n"
    "share/lbknn/configs) says what each does.\n"
    "Environment: LBKNN_MPI=1 starts MPI even without a launcher; LBKNN_GUARD_PAGES=1\n"
    "puts a guard page after every large array; LBKNN_KERNEL_WARNINGS=1 shows the\n"
    "OpenCL compiler's warnings.\n";

void lbk_usage(FILE *out)
{
    char formats[128];
    lbk_dataset_format_generated_names("|", "|", formats, sizeof formats);
    fputs(usage_head, out);
    fputs(formats, out);
    fputs(usage_tail, out);
}

lbk_status lbk_usage_error(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    lbk_error("%s (see 'lbknn --help')", msg);
    return LBK_ERR_USAGE;
}
