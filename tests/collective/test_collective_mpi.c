/* The collective module under mpirun -n P: merges against the oracle over the
 * whole reference set, failure agreement, broadcasts, statistics. One case
 * per invocation; every rank checks what it received. */
/* sched_getaffinity: the thread-share rule depends on the affinity mask. */
#define _GNU_SOURCE
#include "cand_oracle.h"
#include "collective.h"
#include "log.h"

#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int failures;
static lbk_comm comm;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "FAIL rank %d %s:%d: ", comm.rank, __FILE__, __LINE__);        \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

typedef struct {
    uint64_t n, nq;
    int k, levels;
} shape;

/* Includes N < P*K, N < P (empty shards), nq < P, nq = 0, K = 1 and K = LBK_K_MAX,
 * heavy ties. */
static const shape shapes[] = {
    {100, 17, 5, 4}, {3, 5, 5, 0},   {1, 3, 4, 0},  {1000, 2, 16, 0},
    {50, 0, 4, 0},   {40, 9, 1, 3},  {64, 33, 64, 5}, {7, 11, 3, 1},
    {3000, 5, LBK_K_MAX, 2},   /* the largest K: the operator's scratch list */
};

static void check_shape(const shape *s, lbk_merge_mode mode, uint64_t seed)
{
    const int p = comm.size, r = comm.rank;
    /* Shard bounds written out here rather than taken from the module. */
    uint64_t lo = s->n * (uint64_t)r / (uint64_t)p, hi = s->n * (uint64_t)(r + 1) / (uint64_t)p;
    size_t lists = (size_t)s->nq * (size_t)s->k;
    lbk_candidate *local = malloc((lists ? lists : 1) * sizeof *local);
    lbk_candidate *out = malloc((lists ? lists : 1) * sizeof *out);
    lbk_candidate *want = malloc((size_t)s->k * sizeof *want);
    lbk_candidate *scratch = malloc((size_t)(s->n + 1) * sizeof *scratch);
    if (!local || !out || !want || !scratch) {
        CHECK(0, "out of memory");
        goto cleanup;
    }
    for (uint64_t q = 0; q < s->nq; q++)
        co_list(seed, q, lo, hi, s->levels, s->k, scratch, local + q * (size_t)s->k);
    for (size_t i = 0; i < lists; i++)
        out[i] = (lbk_candidate){-1.0f, -7, 12345};   /* poison */

    uint64_t first = 99, count = 99, bytes = 99;
    lbk_status st = lbk_merge_candidates(&comm, mode, local, s->nq, s->k, out, &first, &count,
                                         &bytes);
    CHECK(st == LBK_OK, "merge returned %s", lbk_status_name(st));

    uint64_t want_first = 0, want_count = 0;
    if (mode == LBK_MERGE_REDUCE_SCATTER) {
        want_first = s->nq * (uint64_t)r / (uint64_t)p;
        want_count = s->nq * (uint64_t)(r + 1) / (uint64_t)p - want_first;
    } else if (r == 0) {
        want_count = s->nq;
    }
    CHECK(first == want_first && count == want_count,
          "n %llu nq %llu k %d: slice [%llu +%llu), want [%llu +%llu)",
          (unsigned long long)s->n, (unsigned long long)s->nq, s->k, (unsigned long long)first,
          (unsigned long long)count, (unsigned long long)want_first,
          (unsigned long long)want_count);
    uint64_t list_bytes = (uint64_t)s->k * 16;
    uint64_t want_bytes = p == 1                              ? 0
                          : mode == LBK_MERGE_REDUCE_SCATTER ? (s->nq - want_count) * list_bytes
                          : r == 0                            ? 0
                                                              : s->nq * list_bytes;
    CHECK(bytes == want_bytes, "bytes_moved %llu, want %llu", (unsigned long long)bytes,
          (unsigned long long)want_bytes);
    if (first != want_first || count != want_count)
        goto cleanup;

    for (uint64_t i = 0; i < count; i++) {
        co_list(seed, first + i, 0, s->n, s->levels, s->k, scratch, want);
        for (int j = 0; j < s->k; j++) {
            const lbk_candidate *g = &out[i * (size_t)s->k + (size_t)j];
            if (!co_same(g, &want[j])) {
                CHECK(0, "n %llu nq %llu k %d query %llu slot %d: got (%g, %d, %llu) want (%g, %d, %llu)",
                      (unsigned long long)s->n, (unsigned long long)s->nq, s->k,
                      (unsigned long long)(first + i), j, (double)g->key, g->label,
                      (unsigned long long)g->id, (double)want[j].key, want[j].label,
                      (unsigned long long)want[j].id);
                break;
            }
        }
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
            lbk_collective_set_chunk_bytes((uint64_t)shapes[i].k * 16 * (1 + i % 3));
        check_shape(&shapes[i], mode, 17 + i);
        lbk_collective_set_chunk_bytes(0);
    }
}

static void case_agree(void)
{
    const int last = comm.size - 1;
    lbk_status st = lbk_agree(&comm, LBK_OK);
    CHECK(st == LBK_OK, "all OK: got %s", lbk_status_name(st));

    /* The last rank fails and (as the real code would) says why, once. */
    lbk_status mine = LBK_OK;
    if (comm.rank == last) {
        lbk_error("injected failure for the agreement test");
        mine = LBK_ERR_INPUT;
    }
    st = lbk_agree(&comm, mine);
    if (comm.rank == last)
        CHECK(st == LBK_ERR_INPUT, "failing rank got %s", lbk_status_name(st));
    else
        CHECK(st == LBK_ERR_REMOTE, "healthy rank got %s", lbk_status_name(st));

    /* A later step with everyone healthy agrees on OK again. */
    st = lbk_agree(&comm, LBK_OK);
    CHECK(st == LBK_OK, "after recovery: got %s", lbk_status_name(st));

    /* A rank passing on a remote failure still fails the step. */
    st = lbk_agree(&comm, comm.rank == 0 ? LBK_ERR_REMOTE : LBK_OK);
    CHECK(st != LBK_OK, "REMOTE passed on must not agree to OK");
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
    CHECK(lbk_bcast_job(&comm, &job) == LBK_OK, "bcast_job failed");
    CHECK(job.knn.k == 42 && job.mpi.merge == LBK_MERGE_REDUCE_SCATTER &&
              job.synthetic.points == UINT64_C(123456789012) &&
              strcmp(job.output.report, "/tmp/report-7.yaml") == 0 && job.device.list_len == 2 &&
              job.device.list[1] == 5,
          "job not received intact");

    enum { N = 1001 };
    static float v[N];
    for (int i = 0; i < N; i++)
        v[i] = comm.rank == 0 ? (float)i * 0.5f : -1.0f;
    /* 100 bytes per MPI call: not a multiple of a float, on purpose. */
    lbk_collective_set_chunk_bytes(100);
    CHECK(lbk_bcast_floats(&comm, v, N) == LBK_OK, "bcast_floats failed");
    lbk_collective_set_chunk_bytes(0);
    for (int i = 0; i < N; i++)
        if (v[i] != (float)i * 0.5f) {
            CHECK(0, "float %d is %g", i, (double)v[i]);
            break;
        }
}

static void case_stats(void)
{
    double local[2] = {comm.rank + 1.0, 10.0 - comm.rank}, mn[2], avg[2], mx[2];
    CHECK(lbk_reduce_stats(&comm, local, 2, mn, avg, mx) == LBK_OK, "reduce_stats failed");
    double p = comm.size;
    CHECK(mn[0] == 1.0 && mx[0] == p && avg[0] == (p + 1) / 2, "stats[0] %g %g %g", mn[0],
          avg[0], mx[0]);
    CHECK(mn[1] == 11.0 - p && mx[1] == 10.0 && avg[1] == 10.0 - (p - 1) / 2,
          "stats[1] %g %g %g", mn[1], avg[1], mx[1]);
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
    const long got = lbk_node_core_share(&comm);
    if (want >= online)
        CHECK(got == 0, "%s: whole node is ours, yet a share of %ld", what, got);
    else
        CHECK(got == want, "%s: share %ld, want %ld (online %ld, bound to %d, %d ranks here)",
              what, got, want, online, bound, comm.local_size);
}

static void case_threads(void)
{
    /* mpirun starts every rank on this host, so the node holds them all. */
    CHECK(comm.local_size == comm.size && comm.local_rank == comm.rank,
          "local %d/%d vs world %d/%d", comm.local_rank, comm.local_size, comm.rank, comm.size);
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
                CHECK(lbk_node_core_share(&comm) == 1, "bound to one core: want a share of 1");
            sched_setaffinity(0, sizeof saved, &saved);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (lbk_comm_init(&comm) != LBK_OK) {
        MPI_Finalize();
        return 1;
    }
    const char *c = argc == 2 ? argv[1] : "";
    if (strcmp(c, "reduce") == 0)
        case_merge(LBK_MERGE_REDUCE, 0);
    else if (strcmp(c, "reduce_scatter") == 0)
        case_merge(LBK_MERGE_REDUCE_SCATTER, 0);
    else if (strcmp(c, "reduce_chunked") == 0)
        case_merge(LBK_MERGE_REDUCE, 1);
    else if (strcmp(c, "reduce_scatter_chunked") == 0)
        case_merge(LBK_MERGE_REDUCE_SCATTER, 1);
    else if (strcmp(c, "agree") == 0)
        case_agree();
    else if (strcmp(c, "bcast") == 0)
        case_bcast();
    else if (strcmp(c, "stats") == 0)
        case_stats();
    else if (strcmp(c, "threads") == 0)
        case_threads();
    else {
        if (comm.rank == 0)
            fprintf(stderr, "unknown case '%s'\n", c);
        failures++;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (comm.rank == 0)
        printf("%s on %d ranks: %s\n", c, comm.size, total ? "FAILED" : "ok");
    lbk_comm_free(&comm);
    MPI_Finalize();
    return total ? 1 : 0;
}
