#include "lbk_test_mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

static const lbk_comm *the_comm;

/* After each case, on every rank: the worst result over the ranks (fail
 * beats skip beats ok), said once by rank 0 with the rank count, so that a
 * failure names its case and P whichever rank saw it. */
static int agree(const char *name, int result)
{
    const int mine = result == 0 ? 0 : result == 77 ? 1 : 2;
    int worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    /* A case an ASSERT stopped may not have put the chunk size back; the
     * next case of an --all run must not inherit it. */
    lbk_comm_set_chunk_bytes(0);
    if (the_comm->rank == 0) {
        printf("%s on %d ranks: %s\n", name, the_comm->size,
               worst == 0   ? "ok"
               : worst == 1 ? "skipped"
                            : "FAILED");
        fflush(stdout);
    }
    return worst == 0 ? 0 : worst == 1 ? 77 : 1;
}

int lbk_test_mpi_main(int argc, char **argv, const lbk_test_table *tables, size_t ntables,
                      lbk_comm *comm)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0)
        return lbk_test_main(argc, argv, tables, ntables);
    MPI_Init(&argc, &argv);
    if (lbk_comm_init(comm) != LBK_OK) {
        MPI_Finalize();
        return 1;
    }
    the_comm = comm;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "rank %d: ", comm->rank);
    lbk_test_set_prefix(prefix);
    /* A usage error (2) is every rank's alike: their arguments are the same. */
    const int rc = lbk_test_main_with(argc, argv, tables, ntables, agree);
    lbk_comm_free(comm);
    MPI_Finalize();
    return rc;
}
