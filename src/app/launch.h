/* Every rank of a launch runs one job. Rank 0 alone reads the job file and
 * broadcasts the job, so a rank started with other arguments (an MPMD
 * launch, `mpirun -n 1 lbknn run a.yaml : -n 1 lbknn run b.yaml`, or other
 * --set options per rank) would otherwise run rank 0's job without a word. */
#ifndef LBK_LAUNCH_H
#define LBK_LAUNCH_H

#include "comm.h"
#include "status.h"

/* Collective, once the communicator is set up and before rank 0's job is
 * broadcast: compares what each rank was started with, its command
 * (`command`, then argv[0 .. argc)) and the bytes of the job file job_path
 * as it reads them (NULL: no job file), with rank 0's. On a difference rank
 * 0 logs one line naming the first rank that differs, and every rank
 * returns a status of exit code 2. A rank that finds no regular file at
 * job_path compares its command line only: the job file may exist only
 * where rank 0 runs, which alone reads it. */
lbk_status lbk_launch_agree(const lbk_comm *comm, const char *command, int argc,
                            char *const *argv, const char *job_path);

#endif
