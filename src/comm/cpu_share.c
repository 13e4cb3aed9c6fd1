/* sched_getaffinity / CPU_COUNT: how many cores the launcher bound us to. */
#define _GNU_SOURCE
#include "cpu_share.h"

#include <sched.h>
#include <unistd.h>

/* Cores this process may run on: its affinity mask where the OS has one
 * (launchers bind ranks: Open MPI's mpirun binds to a core for up to two
 * ranks, SLURM confines tasks to cpusets), else every online core. */
static long usable_cores(long online)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < online)
        return CPU_COUNT(&set);
#endif
    return online;
}

long lbk_cpu_share(const lbk_comm *comm)
{
    /* PoCL's CPU device starts one worker thread per online core of the node
     * in every process, whatever the process's affinity. With several ranks
     * on a node that is ranks x cores threads fighting for the cores, and the
     * slowest rank sets the pace of every merge; a rank bound to a few cores
     * would run all those threads on them. So: an equal share of the node,
     * and never more than the cores the rank is bound to. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 1)
        return 0;
    long share = online / (comm->local_size > 0 ? comm->local_size : 1);
    long bound = usable_cores(online);
    if (bound < share)
        share = bound;
    if (share < 1)
        share = 1;
    return share >= online ? 0 : share;
}
