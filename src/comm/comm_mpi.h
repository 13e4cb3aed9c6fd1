/* The MPI side of lbk_comm, for the comm layer's own files only: nothing
 * above this layer includes it (only comm may include <mpi.h>). */
#ifndef LBK_COMM_MPI_H
#define LBK_COMM_MPI_H

#include "comm.h"

#include <mpi.h>

struct lbk_comm_mpi {
    MPI_Comm comm;
};

#define LBK_COMM_MPI(c) ((c)->mpi->comm)

/* LBK_OK for MPI_SUCCESS; otherwise logs "WHAT failed: <MPI's message>" and
 * returns LBK_ERR_MPI, so every MPI error becomes a status at one place. */
lbk_status lbk_comm_mpi_check(int rc, const char *what);

/* MPI_Allreduce on lbknn's communicator; for one rank (with or without MPI)
 * no MPI call: `send` copied to `recv` (count items of item_bytes), or
 * nothing for MPI_IN_PLACE. WHAT names the call in an error. */
lbk_status lbk_comm_mpi_allreduce(const lbk_comm *comm, const void *send, void *recv, int count,
                                  size_t item_bytes, MPI_Datatype type, MPI_Op op,
                                  const char *what);

/* The most bytes one MPI call may carry (lbk_comm_set_chunk_bytes). */
uint64_t lbk_comm_chunk_bytes(void);

#endif
