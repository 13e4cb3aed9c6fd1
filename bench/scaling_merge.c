/* The candidate merge alone: the merge operator's throughput on one core and
 * lbk_merge_candidates (reduce and reduce-scatter) across the ranks of this
 * mpirun, for the numbers in docs/cluster.md's cluster model.
 *
 *   mpirun -n P build/bench/scaling_merge [QUERIES [K]]
 */
#include "collective.h"
#include "knn.h"
#include "timer.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Sorted lists with random gaps, so which rank's candidate wins a merge step
 * is as unpredictable as with real shards. */
static void fill(lbk_knn_candidate *c, uint64_t nq, int k, int rank, int size)
{
    uint64_t s = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(rank + 1);
    for (uint64_t q = 0; q < nq; q++) {
        float key = 0;
        for (int j = 0; j < k; j++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            key += (float)(s >> 40) / (float)(1 << 24);
            lbk_knn_candidate *x = &c[q * (uint64_t)k + (uint64_t)j];
            x->key = key;
            x->label = (int32_t)(q % 10);
            x->id = (uint64_t)j * (uint64_t)size + (uint64_t)rank;
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    lbk_comm comm;
    if (lbk_comm_init(&comm) != LBK_OK)
        return 1;
    uint64_t nq = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    int k = argc > 2 ? atoi(argv[2]) : 16;
    size_t n = (size_t)nq * (size_t)k;
    lbk_knn_candidate *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
                      *out = malloc(n * sizeof *out);
    if (!a || !b || !out)
        return 1;

    if (comm.rank == 0) {
        fill(a, nq, k, 0, 2);
        fill(b, nq, k, 1, 2);
        /* Best of 5, the first one also faulting in `out`'s pages. */
        double t = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = lbk_timer_now();
            for (uint64_t q = 0; q < nq; q++)
                lbk_knn_merge(a + q * (uint64_t)k, b + q * (uint64_t)k, out + q * (uint64_t)k, k);
            t0 = lbk_timer_now() - t0;
            t = t0 < t ? t0 : t;
        }
        printf("merge operator: %llu lists of K=%d in %.4f s (best of 5): %.1f ns/list, %.2f "
               "GB/s of input\n",
               (unsigned long long)nq, k, t, 1e9 * t / (double)nq,
               2.0 * (double)n * sizeof *a / t / 1e9);
    }

    fill(a, nq, k, comm.rank, comm.size);
    for (int mode = 0; mode < 2; mode++) {
        double best = 1e30;
        uint64_t first, count, bytes = 0;
        for (int rep = 0; rep < 5; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = lbk_timer_now();
            if (lbk_merge_candidates(&comm, (lbk_merge_mode)mode, a, nq, k, out, &first, &count,
                                     &bytes) != LBK_OK)
                return 1;
            t = lbk_timer_now() - t;
            double worst = 0;
            MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (worst < best)
                best = worst;
        }
        if (comm.rank == 0)
            printf("%-14s P=%d: %llu queries x K=%d (%.1f MiB per rank): %.4f s (best of 5)\n",
                   mode ? "reduce_scatter" : "reduce", comm.size, (unsigned long long)nq, k,
                   (double)n * sizeof *a / 1048576.0, best);
    }
    free(out);
    free(b);
    free(a);
    lbk_comm_free(&comm);
    MPI_Finalize();
    return 0;
}
