/* See boundary.h. */
#include "boundary.h"

#include "alloc_large.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the case set ---- */

static uint64_t parse_u64(const char *option, const char *text)
{
    char *end = NULL;
    const unsigned long long v = strtoull(text, &end, 0);
    if (!*text || *end) {
        printf("%s needs a number, not '%s'\n", option, text);
        exit(2);
    }
    return v;
}

static void usage_error(const char *what, const char *name)
{
    printf("%s%s; the options are --seed S, --cases N and --case I\n", what, name);
    exit(2);
}

void lbk_bnd_parse(lbk_bnd_options *o, uint64_t seed, uint32_t count)
{
    *o = (lbk_bnd_options){.seed = seed, .first = 0, .count = count, .whole_set = true};
    const int n = lbk_test_arg_count();
    if (n % 2)
        usage_error("every option takes a value", "");
    for (int i = 0; i < n; i += 2) {
        const char *name = lbk_test_arg(i), *value = lbk_test_arg(i + 1);
        if (strcmp(name, "--seed") == 0) {
            o->seed = parse_u64(name, value);
            o->whole_set = false;
        } else if (strcmp(name, "--cases") == 0) {
            o->count = (uint32_t)parse_u64(name, value);
            o->whole_set = false;
        } else if (strcmp(name, "--case") == 0) {
            o->first = (uint32_t)parse_u64(name, value);
            o->count = 1;
            o->whole_set = false;
        } else {
            usage_error("unknown option ", name);
        }
    }
}

lbk_test_rng lbk_bnd_rng(uint64_t seed, const char *set, uint64_t index)
{
    uint64_t h = lbk_test_mix64(seed);
    for (const char *p = set; *p; p++)
        h = lbk_test_mix64(h ^ (unsigned char)*p);
    return (lbk_test_rng)LBK_TEST_RNG(lbk_test_mix64(h ^ lbk_test_mix64(index)));
}

/* What the crash handler writes: formatted beforehand, as a signal handler
 * may only write(). */
static char replay_line[2048];
static char crash_text[8192];

static void compose_crash_text(const char *shape)
{
    snprintf(crash_text, sizeof crash_text, "\ncrashed in %s\nreplay: %s\n", shape, replay_line);
}

const char *lbk_bnd_replay(const char *set, uint64_t seed, uint32_t index)
{
    char exe[1024];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    snprintf(replay_line, sizeof replay_line, "%s%s %s --seed %llu --case %u",
             lbk_alloc_large_guarded() ? "LBKNN_GUARD_PAGES=1 " : "", len > 0 ? exe : "PROGRAM",
             set, (unsigned long long)seed, index);
    compose_crash_text("a case");
    return replay_line;
}

void lbk_bnd_set_shape(const char *shape) { compose_crash_text(shape); }

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define FATAL_SIGNALS (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[FATAL_SIGNALS];

/* Says which case it was, puts the previous action back and returns: the
 * faulting instruction faults again (a raised SIGABRT is raised again by
 * abort()), now into the default action or a sanitizer's handler. */
static void on_crash(int sig)
{
    const size_t len = strlen(crash_text);
    if (len && write(STDERR_FILENO, crash_text, len) < 0)
        crash_text[0] = '\0';
    for (size_t i = 0; i < FATAL_SIGNALS; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &previous[i], NULL);
}

void lbk_bnd_catch_crashes(void)
{
    static bool installed;
    if (installed)
        return;
    installed = true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < FATAL_SIGNALS; i++)
        sigaction(fatal_signals[i], &sa, &previous[i]);
}

/* ---- arrays ---- */

void *lbk_bnd_alloc(size_t bytes)
{
    void *p = lbk_alloc_large(bytes ? bytes : 1);
    LBK_ASSERT_TRUE(p != NULL, "lbk_alloc_large(%zu) failed", bytes);
    return p;
}

void lbk_bnd_free(void *p) { lbk_alloc_large_free(p); }

float *lbk_bnd_copy(const float *x, size_t n)
{
    float *c = lbk_bnd_alloc(n * sizeof *c);
    memcpy(c, x, n * sizeof *c);
    return c;
}

/* ---- shapes ---- */

uint32_t lbk_bnd_between(lbk_test_rng *rng, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)lbk_test_rng_below(rng, (uint64_t)hi - lo + 1);
}

uint32_t lbk_bnd_pick_count(lbk_test_rng *rng, const uint32_t *blocks, size_t nblocks,
                            uint32_t max)
{
    const uint32_t b = blocks[lbk_test_rng_below(rng, nblocks)];
    const uint32_t residues[] = {
        0, 1, 2, b / 2, b > 2 ? b - 2 : 0, b - 1, (uint32_t)lbk_test_rng_below(rng, b)};
    const uint32_t r = residues[lbk_test_rng_below(rng, sizeof residues / sizeof residues[0])];
    const uint32_t top = max / b;
    const uint32_t ms[] = {0,
                           1,
                           2,
                           3,
                           top ? (uint32_t)lbk_test_rng_below(rng, top + 1) : 0,
                           top ? (uint32_t)lbk_test_rng_below(rng, top + 1) : 0};
    const uint64_t m = ms[lbk_test_rng_below(rng, sizeof ms / sizeof ms[0])];
    uint64_t n = m * b + r % b;
    if (n > max) /* the largest multiple below max, with the same residue where it fits */
        n = (uint64_t)top * b + r % b;
    if (n > max)
        n = top ? (uint64_t)(top - 1) * b + r % b : r % ((uint64_t)max + 1);
    return n >= 1 ? (uint32_t)n : 1;
}

int lbk_bnd_pick_dim(lbk_test_rng *rng, const int *edges, size_t nedges, int max)
{
    int d;
    if (lbk_test_rng_below(rng, 4) == 0)
        d = 1 + (int)lbk_test_rng_below(rng, (uint64_t)max);
    else
        d = edges[lbk_test_rng_below(rng, nedges)] + (int)lbk_test_rng_below(rng, 3) - 1;
    return d < 1 ? 1 : d > max ? max : d;
}

/* ---- data ---- */

const char *lbk_bnd_data_name(lbk_bnd_data kind)
{
    static const char *const names[] = {"grid", "uniform", "duplicates", "smooth"};
    return names[kind];
}

void lbk_bnd_fill(float *x, size_t rows, int dim, lbk_bnd_data kind, lbk_test_rng *rng)
{
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * (size_t)dim;
        if (kind == LBK_BND_DUPLICATES && i >= 5) {
            memcpy(row, x + lbk_test_rng_below(rng, 5) * (size_t)dim, (size_t)dim * sizeof *x);
            continue;
        }
        for (int j = 0; j < dim; j++) {
            if (kind == LBK_BND_UNIFORM)
                row[j] = (float)lbk_test_rng_below(rng, 2000001u) / 1000000.0f - 1.0f;
            else if (kind == LBK_BND_SMOOTH)
                row[j] = (j ? row[j - 1] : 0.0f) +
                         (float)lbk_test_rng_below(rng, 100001u) / 1000000.0f - 0.05f;
            else
                row[j] = (float)(int)lbk_test_rng_below(rng, 4) - 1.0f;
        }
    }
}

void lbk_bnd_copy_rows(float *queries, uint32_t nq, const float *ref, uint32_t n, int dim,
                       lbk_test_rng *rng)
{
    for (uint32_t q = 0; q < nq && n > 0; q += 3)
        memcpy(queries + (size_t)q * dim, ref + lbk_test_rng_below(rng, n) * (size_t)dim,
               (size_t)dim * sizeof *queries);
}

size_t lbk_bnd_compare(const float *got_k, const uint32_t *got_i, const float *want_k,
                       const uint32_t *want_i, uint32_t nq, int k, const char *what)
{
    const size_t slots = (size_t)nq * (size_t)k;
    size_t bad = 0;
    for (size_t s = 0; s < slots; s++) {
        if (memcmp(&got_k[s], &want_k[s], sizeof *got_k) == 0 && got_i[s] == want_i[s])
            continue;
        if (++bad <= 4) {
            LBK_EXPECT_EQ_FLOAT(got_k[s], want_k[s], "%s: query %zu slot %zu key", what,
                                s / (size_t)k, s % (size_t)k);
            LBK_EXPECT_EQ_U64(got_i[s], want_i[s], "%s: query %zu slot %zu index", what,
                              s / (size_t)k, s % (size_t)k);
        }
    }
    LBK_EXPECT_EQ_U64(bad, 0, "%s: slots that differ from the oracle, of %zu", what, slots);
    return bad;
}

/* ---- coverage ---- */

uint32_t lbk_bnd_run_case(const char *set, uint64_t seed, uint32_t index, const char *what,
                          void (*run)(void *ctx), void *ctx)
{
    const char *replay = lbk_bnd_replay(set, seed, index);
    lbk_bnd_set_shape(what);
    const int before = lbk_test_failures();
    run(ctx);
    if (lbk_test_failures() == before)
        return 0;
    printf("FAILED %s\n    replay: %s\n", what, replay);
    fflush(stdout);
    return 1;
}

void lbk_bnd_set_done(uint32_t failed, const lbk_bnd_options *o, const lbk_bnd_coverage *c,
                      size_t n)
{
    printf("%u of %u cases failed (seed %llu)\n", failed, o->count, (unsigned long long)o->seed);
    lbk_bnd_coverage_report(c, n, o->whole_set);
}

void lbk_bnd_coverage_report(const lbk_bnd_coverage *c, size_t n, bool check)
{
    printf("coverage (cases that reached each boundary%s):\n",
           check ? "; the whole set must reach each minimum" : "");
    for (size_t i = 0; i < n; i++) {
        printf("  %6u  %s (minimum %u)\n", c[i].count, c[i].what, c[i].minimum);
        if (check)
            LBK_EXPECT_U64(c[i].count, >=, c[i].minimum, "coverage: %s", c[i].what);
    }
    fflush(stdout);
}
