/* main() for a test program run under mpirun -n P whose every case runs on
 * every rank. */
#ifndef LBK_TEST_MPI_H
#define LBK_TEST_MPI_H

#include "comm.h"
#include "lbk_test.h"

/* Initialises MPI and *comm, runs lbk_test_main with every check's line
 * prefixed "rank R: ", and fails the run on every rank when any rank's case
 * failed; rank 0 says "CASE on P ranks: ok|FAILED" once. Frees *comm and
 * finalises MPI. --list lists the cases without MPI (the build runs it, with
 * no mpirun). */
int lbk_test_mpi_main(int argc, char **argv, const lbk_test_table *tables, size_t ntables,
                      lbk_comm *comm);

#endif
