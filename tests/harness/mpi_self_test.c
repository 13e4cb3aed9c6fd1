/* The MPI harness on itself (lbk_test_mpi.h, mpi_cases.sh): in one --all
 * launch a case that fails on one rank only is failed on every rank and
 * named once with the rank count, the cases after it still run, and a case
 * that ends the process leaves it and every later case without a verdict,
 * which mpi_cases.sh names (CMakeLists.txt matches its output). */
/* _exit: leave as a crash does, without the exit handlers (a sanitizer's
 * leak check among them). */
#define _POSIX_C_SOURCE 200809L
#include "lbk_test.h"
#include "lbk_test_mpi.h"

#include <unistd.h>

static lbk_comm comm;

static void case_passes(void) { LBK_EXPECT_EQ_INT(comm.size > 0, 1); }

static void case_fails_on_last_rank(void)
{
    LBK_EXPECT_INT(comm.rank, <, comm.size - 1, "the last rank fails on purpose");
}

static void case_passes_after_failure(void) { LBK_EXPECT_TRUE(comm.rank < comm.size); }

/* Every rank leaves without MPI_Finalize, as a crash in a case would. */
static void case_ends_the_process(void) { _exit(3); }

static void case_never_reached(void) { LBK_EXPECT_TRUE(1); }

static const lbk_test_case cases[] = {
    {"passes", case_passes},
    {"fails_on_last_rank", case_fails_on_last_rank},
    {"passes_after_failure", case_passes_after_failure},
    {"ends_the_process", case_ends_the_process},
    {"never_reached", case_never_reached},
};

int main(int argc, char **argv)
{
    const lbk_test_table table[] = {LBK_TEST_CASES(cases)};
    return lbk_test_mpi_main(argc, argv, table, 1, &comm);
}
