/* Shared by the randomized boundary tests (boundary_brute.c,
 * boundary_kdtree.c): a case set drawn from one seed, where every case is a
 * pure function of (seed, case number), so that one failing case replays
 * alone; the replay command printed on a failure and on a crash; the input
 * and output arrays on lbk_alloc_large, so that under LBKNN_GUARD_PAGES=1 a
 * PROT_NONE page follows each of them; shapes drawn next to the block
 * boundaries where off-by-one bugs live; data and the exact comparison with
 * the host oracle. */
#ifndef LBK_BOUNDARY_H
#define LBK_BOUNDARY_H

#include "lbk_test.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the case set ---- */

/* Options after the harness's case name: `--seed S` (another set), `--cases N`
 * (the first N cases) and `--case I` (only case I: the replay). */
typedef struct {
    uint64_t seed;
    uint32_t first, count;
    bool whole_set; /* no option: the set as shipped, its coverage minimums apply */
} lbk_bnd_options;

void lbk_bnd_parse(lbk_bnd_options *o, uint64_t seed, uint32_t count);

/* A generator for case (or group) `index` of `set` under `seed`: each
 * draw depends on these alone. */
lbk_test_rng lbk_bnd_rng(uint64_t seed, const char *set, uint64_t index);

/* The command that replays case `index` of `set` (program, set, seed,
 * environment): kept for the crash handler and returned for messages. */
const char *lbk_bnd_replay(const char *set, uint64_t seed, uint32_t index);

/* Once per process: a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGABRT) first prints "crashed in case ...", the case's shape (as given
 * to lbk_bnd_set_shape) and its replay command, then takes its previous
 * action (the default, or a sanitizer's report). */
void lbk_bnd_catch_crashes(void);
void lbk_bnd_set_shape(const char *shape);

/* ---- arrays ---- */

/* lbk_alloc_large, asserted (bytes 0 allocates 1); free with lbk_bnd_free. */
void *lbk_bnd_alloc(size_t bytes);
void lbk_bnd_free(void *p);
/* A copy of n floats / uint32s in an array of exactly that size. */
float *lbk_bnd_copy(const float *x, size_t n);

/* ---- shapes ---- */

/* 1 <= n <= max (max >= 1), next to a multiple of one of the block sizes:
 * m * block + r with r in {0, 1, 2, block/2, block - 2, block - 1, random}
 * and m small or random. */
uint32_t lbk_bnd_pick_count(lbk_test_rng *rng, const uint32_t *blocks, size_t nblocks,
                            uint32_t max);

/* 1 <= d <= max: mostly an edge in `edges` or one away from it, else any. */
int lbk_bnd_pick_dim(lbk_test_rng *rng, const int *edges, size_t nedges, int max);

/* Uniform in [lo, hi]. */
uint32_t lbk_bnd_between(lbk_test_rng *rng, uint32_t lo, uint32_t hi);

/* ---- data ---- */

/* GRID: integers -1..2 (exact ties everywhere, zero rows); UNIFORM: 1e-6
 * steps in [-1, 1]; DUPLICATES: GRID rows, each from the first 5 rows;
 * SMOOTH: random walks (neighbouring dimensions alike: the L2 cascade's
 * group sums prune). */
typedef enum { LBK_BND_GRID, LBK_BND_UNIFORM, LBK_BND_DUPLICATES, LBK_BND_SMOOTH } lbk_bnd_data;
#define LBK_BND_DATA_KINDS 4

const char *lbk_bnd_data_name(lbk_bnd_data kind);
void lbk_bnd_fill(float *x, size_t rows, int dim, lbk_bnd_data kind, lbk_test_rng *rng);

/* Every third query a copy of a reference row (zero keys, ties). */
void lbk_bnd_copy_rows(float *queries, uint32_t nq, const float *ref, uint32_t n, int dim,
                       lbk_test_rng *rng);

/* Slots of got that differ from want, byte for byte (keys and indices); the
 * first few are printed with `what` (the case's name and shape). */
size_t lbk_bnd_compare(const float *got_k, const uint32_t *got_i, const float *want_k,
                       const uint32_t *want_i, uint32_t nq, int k, const char *what);

/* ---- coverage ---- */

/* The boundaries a set must reach: each counter is the number of cases that
 * met it; lbk_bnd_coverage_check (whole sets only) fails every counter below
 * its minimum, so a generator change cannot quietly lose a boundary. */
typedef struct {
    const char *what;
    uint32_t minimum;
    uint32_t count;
} lbk_bnd_coverage;

void lbk_bnd_coverage_report(const lbk_bnd_coverage *c, size_t n, bool check);

/* ---- running a set ---- */

/* Case `index` of `set`, described by `what`, through run(ctx): the crash
 * handler knows it while it runs, and a failure prints it with its replay
 * command. 1 when the case failed. */
uint32_t lbk_bnd_run_case(const char *set, uint64_t seed, uint32_t index, const char *what,
                          void (*run)(void *ctx), void *ctx);

/* The set's last lines: how many of its cases failed, then its coverage
 * (checked for a whole set). */
void lbk_bnd_set_done(uint32_t failed, const lbk_bnd_options *o, const lbk_bnd_coverage *c,
                      size_t n);

#endif
