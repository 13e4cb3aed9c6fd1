#include "launch.h"

#include "fnv.h"
#include "log.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Rank 0's loader refuses a job file over 1 MiB: one byte more is all the
 * other ranks need to read to tell files apart that it would take, and a
 * file given by mistake (a data set) is not read whole on every rank. */
#define JOB_HASH_MAX_BYTES ((UINT64_C(1) << 20) + 1)

/* What one rank was started with. Hashes, not the text: an allgather of a
 * fixed size, and nothing of a command line needs to travel. */
typedef struct {
    uint64_t args;     /* the command and its arguments, each with its NUL */
    uint64_t job;      /* the job file's size and first bytes */
    uint64_t job_read; /* 1 when `job` holds them */
} launch_print;

/* The job file's hash, or false where this rank cannot read it as a
 * regular file. Anything else (a FIFO, a process substitution, a
 * terminal) is not opened: opening or reading it would take what rank 0
 * has to read. */
static bool hash_job_file(const char *path, uint64_t *hash)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return false;
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return false;
    bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    uint64_t h = LBK_FNV_OFFSET, left = JOB_HASH_MAX_BYTES;
    unsigned char buf[16384];
    while (ok && left > 0) {
        const ssize_t n = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        h = lbk_fnv_update(h, buf, (size_t)n);
        left -= (uint64_t)n;
    }
    close(fd);
    *hash = lbk_fnv_update(h, &left, sizeof left); /* where it ended: a length too */
    return ok;
}

static void make_print(const char *command, int argc, char *const *argv, const char *job_path,
                       launch_print *p)
{
    memset(p, 0, sizeof *p);
    p->args = lbk_fnv_update(LBK_FNV_OFFSET, command, strlen(command) + 1);
    for (int i = 0; i < argc; i++)
        p->args = lbk_fnv_update(p->args, argv[i], strlen(argv[i]) + 1);
    p->args = lbk_fnv_update(p->args, &argc, sizeof argc);
    p->job_read = job_path && hash_job_file(job_path, &p->job);
}

/* Every rank reaches the same verdict from the same gathered prints, so
 * none needs another agreement: rank 0 says why, the others return the
 * cause's remote status (exit code 2 on every rank). */
static lbk_status compare_prints(const lbk_comm *comm, const launch_print *all,
                                 const char *job_path)
{
    for (int r = 1; r < comm->size; r++) {
        if (all[r].args != all[0].args) {
            if (comm->rank != 0)
                return lbk_status_remote(LBK_ERR_USAGE);
            lbk_error("rank %d was started with another command line than rank 0 (an MPMD "
                      "launch, 'mpirun ... : ...', or other --set options per rank?); every "
                      "rank must run the same command, job file and options",
                      r);
            return LBK_ERR_USAGE;
        }
    }
    for (int r = 1; r < comm->size; r++) {
        if (all[0].job_read && all[r].job_read && all[r].job != all[0].job) {
            if (comm->rank != 0)
                return lbk_status_remote(LBK_ERR_CONFIG);
            lbk_error("%s: rank %d reads other contents under this name than rank 0 (another "
                      "working directory, or a copy on its node that differs); every rank must "
                      "run the same job",
                      job_path, r);
            return LBK_ERR_CONFIG;
        }
    }
    return LBK_OK;
}

lbk_status lbk_launch_agree(const lbk_comm *comm, const char *command, int argc,
                            char *const *argv, const char *job_path)
{
    if (comm->size <= 1)
        return LBK_OK;
    launch_print mine;
    make_print(command, argc, argv, job_path, &mine);
    launch_print *all = calloc((size_t)comm->size, sizeof *all);
    if (!all)
        lbk_error("out of host memory comparing the ranks' command lines");
    lbk_status st = lbk_comm_agree(comm, all ? LBK_OK : LBK_ERR_NOMEM);
    if (st == LBK_OK)
        st = lbk_comm_allgather_bytes(comm, &mine, all, (int)sizeof mine);
    if (st == LBK_OK)
        st = compare_prints(comm, all, job_path);
    free(all);
    return st;
}
