/* How many cores a rank's CPU OpenCL device should use when several ranks
 * share a node. Reads the node-local rank count of the communicator and the
 * process's affinity; sets nothing (the caller decides what to do with it). */
#ifndef LBK_CPU_SHARE_H
#define LBK_CPU_SHARE_H

#include "comm.h"

/* This rank's fair share of the node's cores for a CPU OpenCL device:
 * min(online cores / ranks on the node, cores in the rank's affinity mask),
 * at least 1; 0 when that is every online core (no limit needed). */
long lbk_cpu_share(const lbk_comm *comm);

#endif
