/* The comm layer in one include, for tests and benchmarks that exercise all
 * of it: the communicator and small collectives (comm.h), the K-list merge
 * (merge.h) and the node's core share (cpu_share.h). The layer's own code and
 * src/app include the header they need. MPI stays private to the layer
 * (comm_mpi.h). */
#ifndef LBK_COLLECTIVE_H
#define LBK_COLLECTIVE_H

#include "comm.h"
#include "cpu_share.h"
#include "merge.h"

#endif
