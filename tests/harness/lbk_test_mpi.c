#include "lbk_test_mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

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
    char prefix[32];
    snprintf(prefix, sizeof prefix, "rank %d: ", comm->rank);
    lbk_test_set_prefix(prefix);
    const int rc = lbk_test_main(argc, argv, tables, ntables);
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    /* 2: a usage error, already reported. */
    if (comm->rank == 0 && worst != 2 && argc > 1)
        printf("%s on %d ranks: %s\n", argv[1], comm->size, worst ? "FAILED" : "ok");
    lbk_comm_free(comm);
    MPI_Finalize();
    return worst;
}
