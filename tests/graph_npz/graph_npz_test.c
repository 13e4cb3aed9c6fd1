/* graph_npz_test CASE: the graph .npz writer (src/io/graph_npz.h).
 *
 * The layout cases check offsets against the ZIP and .npy record sizes
 * counted here; the write cases compare files written in different slicings
 * byte for byte. What SciPy, zipfile and unzip make of the files is
 * check_graph_npz.py's part: `graph_npz_test write PATH N R INDEX_SIZE
 * SLICES SEED` writes the graph whose row i, entry j is the value of
 * graph_entry below (the script computes it on its own). */
#include "graph_npz.h"
#include "lbk_test.h"
#include "log.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the graph every write uses ----------------------------------------- */

/* Row i's entry j: a neighbour that is never i, a distance with 24 bits. */
static void graph_entry(uint64_t n, uint64_t i, uint64_t j, uint64_t *id, float *distance)
{
    const uint64_t h = lbk_test_mix64(i << 20 | j);
    *id = (i + 1 + h % (n - 1)) % n;
    *distance = (float)(h >> 40) / (float)(1 << 24);
}

/* Rows [begin, end) with `stride` slots a row; the slots past R hold ids and
 * distances the writer must not read into the file. */
typedef struct {
    uint64_t *ids;
    float *distances;
    lbk_graph_npz_rows rows;
} graph_rows;

static graph_rows rows_make(uint64_t n, uint64_t r, uint64_t begin, uint64_t end, size_t stride)
{
    graph_rows g = {.rows = {.begin = begin, .end = end, .stride = stride}};
    const size_t slots = (size_t)(end - begin) * stride + 1;
    g.ids = malloc(slots * sizeof *g.ids);
    g.distances = malloc(slots * sizeof *g.distances);
    if (!g.ids || !g.distances)
        lbk_test_fail("out of memory for %zu slots", slots);
    for (uint64_t i = begin; i < end; i++)
        for (size_t j = 0; j < stride; j++) {
            uint64_t *id = &g.ids[(i - begin) * stride + j];
            float *d = &g.distances[(i - begin) * stride + j];
            if (j < r)
                graph_entry(n, i, j, id, d);
            else
                *id = i, *d = -1.0f; /* the row itself: refused if it were read */
        }
    g.rows.ids = g.ids;
    g.rows.distances = g.distances;
    return g;
}

static void rows_free(graph_rows *g)
{
    free(g->ids);
    free(g->distances);
}

/* ---- files ---------------------------------------------------------------- */

static const char *scratch(const char *name)
{
    static char dir[512], path[600];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/lbk-graph-npz-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir))
            lbk_test_fail("mkdtemp %s failed", dir);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static int create_file(const char *path)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        lbk_test_fail("cannot create %s", path);
    return fd;
}

static unsigned char *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        lbk_test_fail("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    unsigned char *bytes = malloc(*size + 1);
    if (!bytes || fread(bytes, 1, *size, f) != *size)
        lbk_test_fail("cannot read %s", path);
    fclose(f);
    return bytes;
}

/* Slice boundaries: `slices` cuts of [0, n) at seeded places, empty slices
 * included when two cuts coincide. */
static void cut_rows(uint64_t n, size_t slices, uint64_t seed, uint64_t *bounds)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    bounds[0] = 0;
    bounds[slices] = n;
    for (size_t k = 1; k < slices; k++)
        bounds[k] = lbk_test_rng_below(&rng, n + 1);
    for (size_t k = 1; k < slices; k++) /* insertion sort: few cuts */
        for (size_t m = k; m > 1 && bounds[m - 1] > bounds[m]; m--) {
            const uint64_t t = bounds[m];
            bounds[m] = bounds[m - 1];
            bounds[m - 1] = t;
        }
}

/* The graph of n points, r neighbours, written in `slices` slices visited
 * in a seeded shuffled order, then finished with the slices in row order. */
static lbk_status write_graph(const lbk_graph_npz_sink *sink, uint64_t n, uint64_t r,
                              unsigned index_size, size_t slices, uint64_t seed)
{
    lbk_graph_npz_layout layout;
    lbk_status st = lbk_graph_npz_layout_make(&layout, n, r, index_size, sink->path);
    uint64_t *bounds = malloc((slices + 1) * sizeof *bounds);
    size_t *order = malloc(slices * sizeof *order);
    lbk_graph_npz_slice *done = calloc(slices, sizeof *done);
    if (!bounds || !order || !done)
        lbk_test_fail("out of memory for %zu slices", slices);
    cut_rows(n, slices, seed, bounds);
    lbk_test_rng rng = LBK_TEST_RNG(seed ^ 0x5eed);
    for (size_t k = 0; k < slices; k++)
        order[k] = k;
    for (size_t k = slices; k > 1; k--) { /* Fisher-Yates */
        const size_t m = (size_t)lbk_test_rng_below(&rng, k), t = order[k - 1];
        order[k - 1] = order[m];
        order[m] = t;
    }
    for (size_t k = 0; k < slices && st == LBK_OK; k++) {
        const size_t s = order[k];
        graph_rows g = rows_make(n, r, bounds[s], bounds[s + 1], (size_t)r + (s % 3));
        st = lbk_graph_npz_write_rows(&layout, sink, &g.rows, &done[s]);
        rows_free(&g);
    }
    if (st == LBK_OK)
        st = lbk_graph_npz_finish(&layout, sink, done, slices);
    free(bounds);
    free(order);
    free(done);
    return st;
}

static void write_graph_file(const char *path, uint64_t n, uint64_t r, unsigned index_size,
                             size_t slices, uint64_t seed)
{
    const lbk_graph_npz_sink sink = {.path = path, .fd = create_file(path)};
    printf("%s: N=%" PRIu64 " R=%" PRIu64 " index_size=%u slices=%zu seed=%" PRIu64 "\n", path, n,
           r, index_size, slices, seed);
    LBK_EXPECT_EQ_INT(write_graph(&sink, n, r, index_size, slices, seed), LBK_OK);
    close(sink.fd);
}

/* ---- error capture -------------------------------------------------------- */

typedef struct {
    int errors;
    char last[512];
} captured;

static void capture(void *user, int level, const char *message)
{
    captured *c = user;
    if (level == 0) {
        c->errors++;
        snprintf(c->last, sizeof c->last, "%s", message);
    }
}

/* Exactly one error, and it names path. */
static void expect_one_error(const captured *c, const char *path, const char *cause)
{
    LBK_EXPECT_EQ_INT(c->errors, 1);
    LBK_EXPECT_TRUE(strstr(c->last, path) != NULL, "message: %s", c->last);
    LBK_EXPECT_TRUE(strstr(c->last, cause) != NULL, "message: %s", c->last);
}

/* ---- layout ---------------------------------------------------------------- */

/* A local header is 30 bytes, the name and a 20-byte ZIP64 extra field; a
 * central one 46 bytes, the name and 28; the end records 56 + 20 + 22. */
static void expect_layout(uint64_t n, uint64_t r, unsigned w)
{
    static const char *const names[] = {"indices.npy", "indptr.npy", "format.npy", "shape.npy",
                                        "data.npy"};
    const uint64_t sizes[] = {n * r * w, (n + 1) * w, 3, 16, n * r * 4};
    lbk_graph_npz_layout layout;
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, n, r, w, "g.npz"), LBK_OK);
    LBK_EXPECT_EQ_U64(layout.points, n);
    LBK_EXPECT_EQ_U64(layout.neighbors, r);
    LBK_EXPECT_EQ_U64(layout.index_size, w);
    uint64_t at = 0, directory = 0;
    for (int i = 0; i < LBK_GRAPH_NPZ_MEMBERS; i++) {
        const lbk_graph_npz_member *m = &layout.member[i];
        LBK_EXPECT_EQ_STR(m->name, names[i]);
        LBK_EXPECT_EQ_U64(m->entry_offset, at, "%s", names[i]);
        LBK_EXPECT_EQ_U64(m->content_offset, at + 30 + strlen(names[i]) + 20, "%s", names[i]);
        LBK_EXPECT_EQ_U64(m->npy_header_size, 128, "%s", names[i]);
        LBK_EXPECT_EQ_U64(m->array_offset, m->content_offset + 128, "%s", names[i]);
        LBK_EXPECT_EQ_U64(m->array_size, sizes[i], "%s", names[i]);
        at = m->content_offset + 128 + sizes[i];
        directory += 46 + strlen(names[i]) + 28;
    }
    LBK_EXPECT_EQ_U64(layout.directory_offset, at);
    LBK_EXPECT_EQ_U64(layout.directory_size, directory);
    LBK_EXPECT_EQ_U64(layout.file_size, at + directory + 56 + 20 + 22);
}

static void layout_small(void) { expect_layout(5, 2, 4); }

static void layout_one_point(void)
{
    expect_layout(1, 0, 4);
    expect_layout(0, 0, 4);
}

/* 3e9 points, 30 each: members far past 4 GiB, offsets in 64 bits. */
static void layout_beyond_4gib(void)
{
    expect_layout(3000000000u, 30, 8);
    lbk_graph_npz_layout layout;
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, 3000000000u, 30, 8, "g.npz"), LBK_OK);
    LBK_EXPECT_U64(layout.member[LBK_GRAPH_NPZ_DATA].array_offset, >, UINT64_C(720000000000));
}

/* A .npy header as NumPy 1.24 writes it: the dict, spaces to 127 bytes, a
 * newline (NumPy's own output, as the header's bytes were read off it). */
static void expect_npy_header(const lbk_graph_npz_member *m, const char *dict)
{
    unsigned char want[128];
    memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(want + 10, ' ', sizeof want - 10);
    memcpy(want + 10, dict, strlen(dict));
    want[127] = '\n';
    LBK_EXPECT_EQ_U64(m->npy_header_size, sizeof want, "%s", m->name);
    LBK_EXPECT_EQ_MEM(m->npy_header, want, sizeof want, "%s", m->name);
}

static void npy_headers_as_numpy(void)
{
    lbk_graph_npz_layout layout;
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, 5, 2, 4, "g.npz"), LBK_OK);
    const lbk_graph_npz_member *m = layout.member;
    expect_npy_header(&m[LBK_GRAPH_NPZ_INDICES],
                      "{'descr': '<i4', 'fortran_order': False, 'shape': (10,), }");
    expect_npy_header(&m[LBK_GRAPH_NPZ_INDPTR],
                      "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }");
    expect_npy_header(&m[LBK_GRAPH_NPZ_FORMAT],
                      "{'descr': '|S3', 'fortran_order': False, 'shape': (), }");
    expect_npy_header(&m[LBK_GRAPH_NPZ_SHAPE],
                      "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }");
    expect_npy_header(&m[LBK_GRAPH_NPZ_DATA],
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }");
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, 3000000000u, 30, 8, "g.npz"), LBK_OK);
    expect_npy_header(&m[LBK_GRAPH_NPZ_INDICES],
                      "{'descr': '<i8', 'fortran_order': False, 'shape': (90000000000,), }");
    expect_npy_header(&m[LBK_GRAPH_NPZ_INDPTR],
                      "{'descr': '<i8', 'fortran_order': False, 'shape': (3000000001,), }");
}

/* int32 holds N and N * R up to INT32_MAX, as scipy's get_index_dtype. */
static void index_size_rule(void)
{
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size(1, 0), 4);
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size(46341, 46340), 4); /* 2147441940 */
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size(46341, 46341), 8); /* 2147488281 */
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size(INT32_MAX, 1), 4);
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size((uint64_t)INT32_MAX + 1, 0), 8);
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size((uint64_t)INT32_MAX / 2 + 1, 2), 8);
    LBK_EXPECT_EQ_INT(lbk_graph_npz_index_size(UINT64_MAX, UINT64_MAX), 8);
}

static void expect_layout_refused(uint64_t n, uint64_t r, unsigned w, lbk_status want,
                                  const char *cause)
{
    captured c = {0};
    lbk_log_set_sink(capture, &c);
    lbk_graph_npz_layout layout;
    LBK_EXPECT_EQ_INT(lbk_graph_npz_layout_make(&layout, n, r, w, "some/g.npz"), want,
                      "N=%" PRIu64 " R=%" PRIu64 " w=%u", n, r, w);
    lbk_log_set_sink(NULL, NULL);
    expect_one_error(&c, "some/g.npz", cause);
}

static void refuses_int32_too_small(void)
{
    expect_layout_refused(46342, 46341, 4, LBK_ERR_INTERNAL, "4-byte indices");
    expect_layout_refused((uint64_t)INT32_MAX + 1, 0, 4, LBK_ERR_INTERNAL, "4-byte indices");
    expect_layout_refused(5, 2, 2, LBK_ERR_INTERNAL, "2-byte indices");
}

static void refuses_too_many_neighbours(void)
{
    expect_layout_refused(3, 3, 4, LBK_ERR_INTERNAL, "cannot have 3 neighbours");
    expect_layout_refused(1, 1, 4, LBK_ERR_INTERNAL, "cannot have 1 neighbours");
    expect_layout_refused(0, 1, 4, LBK_ERR_INTERNAL, "cannot have 1 neighbours");
}

static void refuses_too_large(void)
{
    expect_layout_refused((uint64_t)1 << 56, 1, 8, LBK_ERR_INPUT, "too large");
    expect_layout_refused((uint64_t)1 << 40, (uint64_t)1 << 20, 8, LBK_ERR_INPUT, "too large");
}

/* ---- writing ---------------------------------------------------------------- */

static void expect_same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = read_whole(a, &na), *y = read_whole(b, &nb);
    LBK_EXPECT_EQ_U64(na, nb, "%s and %s", a, b);
    if (na == nb)
        LBK_EXPECT_EQ_MEM(x, y, na, "%s and %s", a, b);
    free(x);
    free(y);
}

/* One slice, then several in shuffled orders (empty ones among them, rows
 * with strides past R): the same bytes. */
static void expect_slicings_agree(uint64_t n, uint64_t r, unsigned w)
{
    char whole[600];
    snprintf(whole, sizeof whole, "%s", scratch("whole.npz"));
    write_graph_file(whole, n, r, w, 1, 1);
    const size_t slicings[] = {2, 5, 16, (size_t)n + 3};
    for (size_t k = 0; k < sizeof slicings / sizeof slicings[0]; k++) {
        const char *sliced = scratch("sliced.npz");
        write_graph_file(sliced, n, r, w, slicings[k], 100 + k);
        expect_same_file(whole, sliced);
        unlink(sliced);
    }
    lbk_graph_npz_layout layout;
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, n, r, w, whole), LBK_OK);
    struct stat sb;
    LBK_ASSERT_EQ_INT(stat(whole, &sb), 0);
    LBK_EXPECT_EQ_U64((uint64_t)sb.st_size, layout.file_size);
    unlink(whole);
}

static void slicings_agree(void) { expect_slicings_agree(37, 5, 4); }
static void slicings_agree_int64(void) { expect_slicings_agree(37, 5, 8); }
static void slicings_agree_one_point(void) { expect_slicings_agree(1, 0, 4); }
static void slicings_agree_two_points(void) { expect_slicings_agree(2, 1, 4); }

/* A write-at callback into memory writes what pwrite does. */
typedef struct {
    unsigned char *bytes;
    size_t size;
} memory_file;

static lbk_status memory_write(void *context, uint64_t offset, const void *data, size_t size)
{
    memory_file *f = context;
    if (offset + size > f->size)
        lbk_test_fail("write of %zu bytes at %" PRIu64 " past the file's %zu", size, offset,
                      f->size);
    memcpy(f->bytes + offset, data, size);
    return LBK_OK;
}

static void callback_sink(void)
{
    const char *path = scratch("fd.npz");
    write_graph_file(path, 50, 7, 4, 4, 7);
    size_t size;
    unsigned char *want = read_whole(path, &size);
    memory_file f = {calloc(size, 1), size};
    const lbk_graph_npz_sink sink = {.path = "memory", .write_at = memory_write, .context = &f};
    LBK_ASSERT_EQ_INT(write_graph(&sink, 50, 7, 4, 3, 8), LBK_OK);
    LBK_EXPECT_EQ_MEM(f.bytes, want, size);
    free(f.bytes);
    free(want);
    unlink(path);
}

/* The finisher with slices that do not tile [0, N) in order. */
static void expect_slices_refused(const lbk_graph_npz_slice *slices, size_t count,
                                  const char *cause)
{
    lbk_graph_npz_layout layout;
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, 10, 2, 4, "g.npz"), LBK_OK);
    const char *path = scratch("refused.npz");
    const lbk_graph_npz_sink sink = {.path = path, .fd = create_file(path)};
    captured c = {0};
    lbk_log_set_sink(capture, &c);
    LBK_EXPECT_EQ_INT(lbk_graph_npz_finish(&layout, &sink, slices, count), LBK_ERR_INTERNAL);
    lbk_log_set_sink(NULL, NULL);
    expect_one_error(&c, path, cause);
    struct stat sb;
    LBK_EXPECT_TRUE(fstat(sink.fd, &sb) == 0 && sb.st_size == 0, "nothing written");
    close(sink.fd);
    unlink(path);
}

static void refuses_bad_slices(void)
{
    const lbk_graph_npz_slice gap[] = {{.begin = 0, .end = 4}, {.begin = 5, .end = 10}};
    expect_slices_refused(gap, 2, "slice 1 holds rows 5..10, not rows from 4 on");
    const lbk_graph_npz_slice overlap[] = {{.begin = 0, .end = 6}, {.begin = 4, .end = 10}};
    expect_slices_refused(overlap, 2, "slice 1 holds rows 4..10, not rows from 6 on");
    const lbk_graph_npz_slice late[] = {{.begin = 2, .end = 10}};
    expect_slices_refused(late, 1, "slice 0 holds rows 2..10, not rows from 0 on");
    const lbk_graph_npz_slice backwards[] = {{.begin = 0, .end = 8}, {.begin = 8, .end = 3}};
    expect_slices_refused(backwards, 2, "slice 1 holds rows 8..3");
    const lbk_graph_npz_slice short_[] = {{.begin = 0, .end = 9}};
    expect_slices_refused(short_, 1, "end at row 9 of 10");
    expect_slices_refused(NULL, 0, "end at row 0 of 10");
}

/* A neighbour id the graph cannot hold (write_rows' only check of values). */
static void expect_neighbour_refused(uint64_t bad_id, const char *cause)
{
    lbk_graph_npz_layout layout;
    LBK_ASSERT_EQ_INT(lbk_graph_npz_layout_make(&layout, 10, 2, 4, "g.npz"), LBK_OK);
    const char *path = scratch("refused.npz");
    const lbk_graph_npz_sink sink = {.path = path, .fd = create_file(path)};
    graph_rows g = rows_make(10, 2, 3, 6, 2);
    g.ids[2 * 2 + 1] = bad_id; /* row 5's second neighbour */
    captured c = {0};
    lbk_log_set_sink(capture, &c);
    lbk_graph_npz_slice slice;
    LBK_EXPECT_EQ_INT(lbk_graph_npz_write_rows(&layout, &sink, &g.rows, &slice),
                      LBK_ERR_INTERNAL);
    lbk_log_set_sink(NULL, NULL);
    expect_one_error(&c, path, cause);
    rows_free(&g);
    close(sink.fd);
    unlink(path);
}

static void refuses_self_neighbour(void)
{
    expect_neighbour_refused(5, "row 5's neighbour 1 is the row itself (id 5)");
}

static void refuses_unknown_neighbour(void)
{
    expect_neighbour_refused(10, "row 5's neighbour 1 is no point (id 10)");
}

/* A sink that cannot be written: one error, naming the file and why. */
static void write_failure_names_file(void)
{
    const char *path = scratch("readonly.npz");
    close(create_file(path));
    const lbk_graph_npz_sink sink = {.path = path, .fd = open(path, O_RDONLY)};
    captured c = {0};
    lbk_log_set_sink(capture, &c);
    LBK_EXPECT_EQ_INT(write_graph(&sink, 10, 2, 4, 1, 1), LBK_ERR_IO);
    lbk_log_set_sink(NULL, NULL);
    expect_one_error(&c, path, "Bad file descriptor");
    close(sink.fd);
    unlink(path);
}

/* write PATH N R INDEX_SIZE SLICES SEED: for check_graph_npz.py. */
static void write_for_script(void)
{
    lbk_test_args(6, 6, "write PATH N R INDEX_SIZE SLICES SEED");
    const uint64_t n = strtoull(lbk_test_arg(1), NULL, 10);
    const uint64_t r = strtoull(lbk_test_arg(2), NULL, 10);
    const unsigned w = (unsigned)strtoul(lbk_test_arg(3), NULL, 10);
    const size_t slices = (size_t)strtoull(lbk_test_arg(4), NULL, 10);
    const uint64_t seed = strtoull(lbk_test_arg(5), NULL, 10);
    write_graph_file(lbk_test_arg(0), n, r, w, slices, seed);
}

static const lbk_test_case cases[] = {
    {"layout_small", layout_small},
    {"layout_one_point", layout_one_point},
    {"layout_beyond_4gib", layout_beyond_4gib},
    {"npy_headers_as_numpy", npy_headers_as_numpy},
    {"index_size_rule", index_size_rule},
    {"refuses_int32_too_small", refuses_int32_too_small},
    {"refuses_too_many_neighbours", refuses_too_many_neighbours},
    {"refuses_too_large", refuses_too_large},
    {"slicings_agree", slicings_agree},
    {"slicings_agree_int64", slicings_agree_int64},
    {"slicings_agree_one_point", slicings_agree_one_point},
    {"slicings_agree_two_points", slicings_agree_two_points},
    {"callback_sink", callback_sink},
    {"refuses_bad_slices", refuses_bad_slices},
    {"refuses_self_neighbour", refuses_self_neighbour},
    {"refuses_unknown_neighbour", refuses_unknown_neighbour},
    {"write_failure_names_file", write_failure_names_file},
    {"write", write_for_script},
};
static const lbk_test_table table = LBK_TEST_CASES(cases);

LBK_TEST_MAIN(table)
