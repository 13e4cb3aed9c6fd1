/* The blocked layout's edges (src/engines/brute_layout.h), on the host: for
 * every lane count and register block and every row count from 1 to three
 * register blocks, each slot holds its row's value or +0.0 past the last
 * row, and nothing beyond the rows is read. The rows end right before a
 * PROT_NONE page, so a read past them faults here whatever the heap does
 * (the bug this guards against read whole blocks past the array). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "brute_layout.h"
#include "lbk_test.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The shape in progress, for the fault handler: a read past the rows ends
 * the program, and this says where. */
static char current_shape[128];

static void report_fault(int sig)
{
    static const char what[] = "fault (read or write past a guarded array) at ";
    /* A failed write changes nothing: the exit status still says it. */
    ssize_t written = write(STDERR_FILENO, what, sizeof what - 1);
    written = write(STDERR_FILENO, current_shape, strlen(current_shape));
    (void)written;
    _exit(128 + sig);
}

typedef struct {
    unsigned char *base;
    size_t length;
    void *data;
} guarded;

/* `bytes` that end exactly at a PROT_NONE page. */
static guarded guarded_alloc(size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (bytes + page - 1) / page * page;
    guarded g = {NULL, body + page, NULL};
    g.base = mmap(NULL, g.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    LBK_ASSERT_TRUE(g.base != MAP_FAILED, "mmap of %zu bytes", g.length);
    LBK_ASSERT_EQ_INT(mprotect(g.base + body, page, PROT_NONE), 0, "mprotect");
    g.data = g.base + body - bytes;
    return g;
}

static void guarded_free(guarded *g) { munmap(g->base, g->length); }

/* One shape: n rows of dim values, lanes per block, padded to vrows. */
static void check_shape(size_t n, size_t dim, size_t lanes, size_t vrows)
{
    const size_t padded = (n + vrows - 1) / vrows * vrows;
    snprintf(current_shape, sizeof current_shape, "n=%zu dim=%zu lanes=%zu vrows=%zu\n", n, dim,
             lanes, vrows);
    guarded src = guarded_alloc(n * dim * sizeof(float));
    guarded dst = guarded_alloc(padded * dim * sizeof(float));
    float *rows = src.data, *out = dst.data;
    for (size_t i = 0; i < n * dim; i++)
        rows[i] = (float)(i + 1); /* never 0: a zero slot is padding */
    for (size_t i = 0; i < padded * dim; i++)
        out[i] = NAN; /* a slot the layout forgot stays NaN */
    lbk_brute_layout_blocked(rows, n, dim, lanes, padded, sizeof *rows, out);
    for (size_t r = 0; r < padded; r++)
        for (size_t j = 0; j < dim; j++) {
            const size_t slot = (r / lanes) * dim * lanes + j * lanes + r % lanes;
            const float want = r < n ? rows[r * dim + j] : 0.0f;
            if (!LBK_EXPECT_EQ_FLOAT(out[slot], want,
                                     "n=%zu dim=%zu lanes=%zu vrows=%zu: row %zu dim %zu", n, dim,
                                     lanes, vrows, r, j))
                goto done;
        }
done:
    guarded_free(&src);
    guarded_free(&dst);
}

static void run_padding(void)
{
    static const size_t lane_counts[] = {4, 8, 16};
    static const size_t dims[] = {1, 2, 3, 7, 16, 33};
    signal(SIGSEGV, report_fault);
    signal(SIGBUS, report_fault);
    for (size_t li = 0; li < sizeof lane_counts / sizeof *lane_counts; li++)
        for (size_t vectors = 1; vectors <= 8; vectors++) {
            const size_t lanes = lane_counts[li], vrows = lanes * vectors;
            for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
                for (size_t n = 1; n <= 3 * vrows; n++)
                    check_shape(n, dims[di], lanes, vrows);
        }
}

static const lbk_test_case cases[] = {
    {"padding", run_padding},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
