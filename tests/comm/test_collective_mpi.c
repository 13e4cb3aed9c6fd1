/* The collective module under mpirun -n P: merges against the oracle over the
 * whole reference set, failure agreement, broadcasts, statistics. Every
 * case in one launch (--all), or one (CASE); every rank checks what it
 * received. */
/* sched_getaffinity: the thread-share rule depends on the affinity mask. */
#define _GNU_SOURCE
#include "cand_oracle.h"
#include "collective.h"
#include "comm_job.h"
#include "lbk_test.h"
#include "lbk_test_mpi.h"
#include "log.h"

#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Every rank runs the same case and checks what it received; no check may
 * stop a case (an ASSERT would leave the other ranks waiting). */
static lbk_comm comm;

typedef struct {
    uint64_t n, nq;
    int k, levels;
} shape;

/* Includes N < P*K, N < P (empty shards), nq < P, nq = 0, K = 1 and K = LBK_K_MAX,
 * heavy ties. */
static const shape
    shapes[] =
        {
            {100, 17, 5, 4},         {3, 5, 5, 0},  {1, 3, 4, 0},    {1000, 2, 16, 0},
            {50, 0, 4, 0},           {40, 9, 1, 3}, {64, 33, 64, 5}, {7, 11, 3, 1},
            {3000, 5, LBK_K_MAX, 2}, /* the largest K: the operator's scratch list */
};

static void check_shape(const shape *s, lbk_merge_mode mode, uint64_t seed)
{
    const int p = comm.size, r = comm.rank;
    /* Shard bounds written out here rather than taken from the module. */
    uint64_t lo = s->n * (uint64_t)r / (uint64_t)p, hi = s->n * (uint64_t)(r + 1) / (uint64_t)p;
    size_t lists = (size_t)s->nq * (size_t)s->k;
    lbk_knn_candidate *local = malloc((lists ? lists : 1) * sizeof *local);
    lbk_knn_candidate *out = malloc((lists ? lists : 1) * sizeof *out);
    lbk_knn_candidate *want = malloc((size_t)s->k * sizeof *want);
    lbk_knn_candidate *scratch = malloc((size_t)(s->n + 1) * sizeof *scratch);
    if (!LBK_EXPECT_TRUE(local && out && want && scratch, "out of memory"))
        goto cleanup;
    for (uint64_t q = 0; q < s->nq; q++)
        co_list(seed, q, lo, hi, s->levels, s->k, scratch, local + q * (size_t)s->k);
    for (size_t i = 0; i < lists; i++)
        out[i] = (lbk_knn_candidate){-1.0f, -7, 12345}; /* poison */

    uint64_t first = 99, count = 99, bytes = 99;
    lbk_status st =
        lbk_merge_candidates(&comm, mode, local, s->nq, s->k, out, &first, &count, &bytes);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "merge returned %s", lbk_status_name(st));

    uint64_t want_first = 0, want_count = 0;
    if (mode == LBK_MERGE_REDUCE_SCATTER) {
        want_first = s->nq * (uint64_t)r / (uint64_t)p;
        want_count = s->nq * (uint64_t)(r + 1) / (uint64_t)p - want_first;
    } else if (r == 0) {
        want_count = s->nq;
    }
    char what[96];
    snprintf(what, sizeof what, "n %llu nq %llu k %d", (unsigned long long)s->n,
             (unsigned long long)s->nq, s->k);
    const int first_ok = LBK_EXPECT_EQ_U64(first, want_first, "%s: slice start", what);
    const int count_ok = LBK_EXPECT_EQ_U64(count, want_count, "%s: slice length", what);
    uint64_t list_bytes = (uint64_t)s->k * 16;
    uint64_t want_bytes = p == 1                             ? 0
                          : mode == LBK_MERGE_REDUCE_SCATTER ? (s->nq - want_count) * list_bytes
                          : r == 0                           ? 0
                                                             : s->nq * list_bytes;
    LBK_EXPECT_EQ_U64(bytes, want_bytes, "%s: bytes moved", what);
    if (!first_ok || !count_ok)
        goto cleanup;

    for (uint64_t i = 0; i < count; i++) {
        co_list(seed, first + i, 0, s->n, s->levels, s->k, scratch, want);
        char query[128];
        snprintf(query, sizeof query, "%s query %llu", what, (unsigned long long)(first + i));
        co_expect_lists(out + i * (size_t)s->k, want, s->k, query);
    }

cleanup:
    free(scratch);
    free(want);
    free(out);
    free(local);
}

static void case_merge(lbk_merge_mode mode, int chunked)
{
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        /* Chunked: a few lists per MPI call, so the count-splitting and the
         * packed reduce-scatter rounds run with small data. */
        if (chunked)
            lbk_comm_set_chunk_bytes((uint64_t)shapes[i].k * 16 * (1 + i % 3));
        check_shape(&shapes[i], mode, 17 + i);
        lbk_comm_set_chunk_bytes(0);
    }
}

static void case_agree(void)
{
    const int last = comm.size - 1;
    lbk_status st = lbk_comm_agree(&comm, LBK_OK);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "all OK: got %s", lbk_status_name(st));

    /* The last rank fails and (as the real code would) says why, once. */
    lbk_status mine = LBK_OK;
    if (comm.rank == last) {
        lbk_error("injected failure for the agreement test");
        mine = LBK_ERR_INPUT;
    }
    st = lbk_comm_agree(&comm, mine);
    if (comm.rank == last)
        LBK_EXPECT_EQ_INT(st, LBK_ERR_INPUT, "failing rank got %s", lbk_status_name(st));
    else
        LBK_EXPECT_EQ_INT(st, LBK_ERR_REMOTE_INPUT, "healthy rank got %s", lbk_status_name(st));
    LBK_EXPECT_EQ_INT(lbk_status_exit_code(st), lbk_status_exit_code(LBK_ERR_INPUT),
                      "every rank exits with the cause's code (%s)", lbk_status_name(st));

    /* Two ranks fail in different classes at once: still one exit code,
     * the worst cause's, on every rank. */
    if (comm.size > 1) {
        mine = comm.rank == 0 ? LBK_ERR_IO : comm.rank == last ? LBK_ERR_INPUT : LBK_OK;
        st = lbk_comm_agree(&comm, mine);
        LBK_EXPECT_EQ_INT(lbk_status_exit_code(st), lbk_status_exit_code(LBK_ERR_IO),
                          "mixed causes: rank %d got %s", comm.rank, lbk_status_name(st));
    }

    /* A later step with everyone healthy agrees on OK again. */
    st = lbk_comm_agree(&comm, LBK_OK);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "after recovery: got %s", lbk_status_name(st));

    /* A rank passing on a remote failure still fails the step. */
    st = lbk_comm_agree(&comm, comm.rank == 0 ? LBK_ERR_REMOTE : LBK_OK);
    LBK_EXPECT_INT(st, !=, LBK_OK, "REMOTE passed on must not agree to OK");
}

static void case_bcast(void)
{
    lbk_job job;
    memset(&job, 0, sizeof job);
    if (comm.rank == 0) {
        job.knn.k = 42;
        job.mpi.merge = LBK_MERGE_REDUCE_SCATTER;
        job.synthetic.points = UINT64_C(123456789012);
        snprintf(job.output.report, sizeof job.output.report, "/tmp/report-%d.yaml", 7);
        job.device.list_len = 2;
        job.device.list[1] = 5;
    }
    LBK_EXPECT_EQ_INT(lbk_comm_bcast_job(&comm, &job), LBK_OK);
    LBK_EXPECT_EQ_INT(job.knn.k, 42);
    LBK_EXPECT_EQ_INT(job.mpi.merge, LBK_MERGE_REDUCE_SCATTER);
    LBK_EXPECT_EQ_U64(job.synthetic.points, UINT64_C(123456789012));
    LBK_EXPECT_EQ_STR(job.output.report, "/tmp/report-7.yaml");
    LBK_EXPECT_EQ_INT(job.device.list_len, 2);
    LBK_EXPECT_EQ_INT(job.device.list[1], 5);

    enum { N = 1001 };
    static float v[N];
    for (int i = 0; i < N; i++)
        v[i] = comm.rank == 0 ? (float)i * 0.5f : -1.0f;
    /* 100 bytes per MPI call: not a multiple of a float, on purpose. */
    lbk_comm_set_chunk_bytes(100);
    LBK_EXPECT_EQ_INT(lbk_comm_bcast_floats(&comm, v, N), LBK_OK);
    lbk_comm_set_chunk_bytes(0);
    for (int i = 0; i < N; i++)
        if (!LBK_EXPECT_EQ_FLOAT(v[i], (float)i * 0.5f, "float %d", i))
            break;
}

static void case_stats(void)
{
    double local[2] = {comm.rank + 1.0, 10.0 - comm.rank}, mn[2], avg[2], mx[2];
    LBK_EXPECT_EQ_INT(lbk_comm_reduce_stats(&comm, local, 2, mn, avg, mx), LBK_OK);
    double p = comm.size;
    LBK_EXPECT_EQ_DOUBLE(mn[0], 1.0);
    LBK_EXPECT_EQ_DOUBLE(mx[0], p);
    LBK_EXPECT_EQ_DOUBLE(avg[0], (p + 1) / 2);
    LBK_EXPECT_EQ_DOUBLE(mn[1], 11.0 - p);
    LBK_EXPECT_EQ_DOUBLE(mx[1], 10.0);
    LBK_EXPECT_EQ_DOUBLE(avg[1], 10.0 - (p - 1) / 2);
}

static int affinity_count(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
}

/* The documented rule, written out: min(online / ranks on the node, cores in
 * the affinity mask), at least 1; nothing set when that is every core. */
static void expect_share(const char *what)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long want = online / comm.local_size;
    int bound = affinity_count();
    if (bound > 0 && bound < want)
        want = bound;
    if (want < 1)
        want = 1;
    const long got = lbk_cpu_share(&comm);
    if (want >= online)
        LBK_EXPECT_EQ_INT(got, 0, "%s: the whole node is ours, so no share is set", what);
    else
        LBK_EXPECT_EQ_INT(got, want, "%s: online %ld, bound to %d, %d ranks here", what, online,
                          bound, comm.local_size);
}

static void case_threads(void)
{
    /* mpirun starts every rank on this host, so the node holds them all. */
    LBK_EXPECT_EQ_INT(comm.local_size, comm.size);
    LBK_EXPECT_EQ_INT(comm.local_rank, comm.rank);
    expect_share("as launched");

    /* Bound to one core (as mpirun -n 1 or 2 does by default): one thread,
     * even for a single rank, whenever the machine has more cores. */
    cpu_set_t saved, one;
    if (sched_getaffinity(0, sizeof saved, &saved) == 0) {
        int cpu = 0;
        while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved))
            cpu++;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) {
            expect_share("bound to one core");
            if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
                LBK_EXPECT_EQ_INT(lbk_cpu_share(&comm), 1, "bound to one core");
            sched_setaffinity(0, sizeof saved, &saved);
        }
    }
}

static void case_reduce(void) { case_merge(LBK_MERGE_REDUCE, 0); }
static void case_reduce_scatter(void) { case_merge(LBK_MERGE_REDUCE_SCATTER, 0); }
static void case_reduce_chunked(void) { case_merge(LBK_MERGE_REDUCE, 1); }
static void case_reduce_scatter_chunked(void) { case_merge(LBK_MERGE_REDUCE_SCATTER, 1); }

static const lbk_test_case cases[] = {
    {"reduce", case_reduce},
    {"reduce_scatter", case_reduce_scatter},
    {"reduce_chunked", case_reduce_chunked},
    {"reduce_scatter_chunked", case_reduce_scatter_chunked},
    {"agree", case_agree},
    {"bcast", case_bcast},
    {"stats", case_stats},
    {"threads", case_threads},
};

int main(int argc, char **argv)
{
    const lbk_test_table table[] = {LBK_TEST_CASES(cases)};
    return lbk_test_mpi_main(argc, argv, table, 1, &comm);
}
