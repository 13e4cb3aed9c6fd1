/* main() for a test program run under mpirun -n P whose every case runs on
 * every rank. */
#ifndef LBK_TEST_MPI_H
#define LBK_TEST_MPI_H

#include "comm.h"
#include "lbk_test.h"

/* Initialises MPI and *comm, runs lbk_test_main with every check's line
 * prefixed "rank R: ", and fails a case on every rank when any rank's run
 * of it failed (skips it when one skipped and none failed); after each case
 * rank 0 says "CASE on P ranks: ok|skipped|FAILED" once. `--all` runs every
 * case in this one launch (tests/harness/mpi_cases.sh checks that each one
 * said ok). Frees *comm and finalises MPI. --list lists the cases without
 * MPI (the build runs it, with no mpirun). */
int lbk_test_mpi_main(int argc, char **argv, const lbk_test_table *tables, size_t ntables,
                      lbk_comm *comm);

#endif
