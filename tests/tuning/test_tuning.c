/* Kernel parameters (src/engines/tuning.h) and their caches
 * (src/task/tune_cache.h, src/task/device_tuning.h, src/device/program_cache.h). Device cases take a
 * scratch directory (argv[2]) of their own. */
#include "device_cl.h"
#include "device_tuning.h"
#include "job.h"
#include "lbk_test.h"
#include "lbknn.h"
#include "log.h"
#include "tune_cache.h"
#include "tuning.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static lbk_device *dev;
static char dir[1024], path[4096];

/* The device, and a fresh scratch directory with the cache file's path. */
static void open_device(void)
{
    lbk_test_args(1, 1, "WORKDIR");
    lbk_test_require_opencl();
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    snprintf(dir, sizeof dir, "%s", lbk_test_arg(0));
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    LBK_ASSERT_EQ_INT(system(cmd), 0, "%s", cmd);
    LBK_ASSERT_TRUE(lbk_tune_cache_path(dir, dev, path, sizeof path));
}

static void write_text(const char *text)
{
    FILE *f = fopen(path, "w");
    LBK_ASSERT_TRUE(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* A well-formed cache file for this device with the given parameter lines
 * (and identity lines; `device` NULL = this device's name). */
static void write_cache(const char *device, const char *params)
{
    char text[4096];
    snprintf(text, sizeof text,
             "# test\nlbknn_version: \"%s\"\ndevice: \"%s\"\ndevice_version: \"%s\"\n"
             "driver: \"%s\"\n%s",
             LBK_VERSION, device ? device : lbk_device_name(dev), lbk_device_version(dev),
             lbk_device_driver(dev), params);
    write_text(text);
}

static const char good_params[] = "lanes: 8\nblock_queries: 5\nblock_vectors: 3\n"
                                  "tile_blocks: 7\nslice: 99\nsegment_log2: 11\n";

static void expect_ignored(const char *what)
{
    lbk_tuning t;
    lbk_log_set_quiet(true);
    LBK_EXPECT_EQ_INT(lbk_tune_cache_read(path, dev, &t), LBK_TUNE_CACHE_IGNORED, "%s", what);
    lbk_log_set_quiet(false);
}

static void test_cpu_vector_bits(void)
{
    const struct {
        const char *name, *version;
        int bits;
    } rows[] = {
        {"pthread-skylake-avx512-Intel(R) Xeon(R)", NULL, 512},
        {"pthread-haswell-AMD EPYC 7B12",
         "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-haswell", 256},
        {"cpu", "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512", 512},
        {"pthread-znver3-AMD EPYC 7763", NULL, 256},
        {"pthread-znver4-AMD EPYC 9654", NULL, 512},
        {"pthread-sapphirerapids-Intel", NULL, 512},
        {"pthread-x86-64-v3", NULL, 256},
        {"NVIDIA H200", "OpenCL 3.0 CUDA", 0},
        {"pthread-cortex-a72", NULL, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        LBK_EXPECT_EQ_INT(lbk_tuning_cpu_vector_bits(rows[i].name, rows[i].version), rows[i].bits,
                          "%s", rows[i].name);
}

/* The derived parameters are valid, and the register block fits the
 * vector registers with the reference vectors and a broadcast. */
static void test_derived(void)
{
    open_device();
    lbk_tuning t;
    lbk_tuning_derive(dev, &t);
    char why[128] = "";
    LBK_EXPECT_TRUE(lbk_tuning_valid(&t, why, sizeof why), "%s", why);
    LBK_EXPECT_EQ_INT(t.source, LBK_TUNING_DERIVED);
    const int regs = t.lanes >= 16 ? 32 : 16;
    LBK_EXPECT_INT(t.block_queries * t.block_vectors + t.block_vectors + 1, <=, regs);
}

static void test_cache_roundtrip(void)
{
    open_device();
    lbk_tuning t = {.lanes = 4,
                    .block_queries = 3,
                    .block_vectors = 2,
                    .tile_blocks = 5,
                    .slice = 77,
                    .segment_log2 = 9};
    LBK_ASSERT_EQ_INT(lbk_tune_cache_write(path, dev, &t, "a comment\nover two lines"), LBK_OK);
    lbk_tuning got;
    LBK_ASSERT_EQ_INT(lbk_tune_cache_read(path, dev, &got), LBK_TUNE_CACHE_USED);
    LBK_EXPECT_EQ_INT(got.source, LBK_TUNING_CACHE);
    t.source = LBK_TUNING_CACHE;
    LBK_EXPECT_EQ_MEM(&got, &t, sizeof t);
    write_cache(NULL, good_params);
    LBK_ASSERT_EQ_INT(lbk_tune_cache_read(path, dev, &got), LBK_TUNE_CACHE_USED);
    LBK_EXPECT_EQ_INT(got.block_vectors, 3);
    LBK_EXPECT_EQ_INT(got.slice, 99);
}

static void test_cache_missing(void)
{
    open_device();
    lbk_tuning t;
    LBK_EXPECT_EQ_INT(lbk_tune_cache_read(path, dev, &t), LBK_TUNE_CACHE_MISSING);
}

static void test_cache_corrupt(void)
{
    open_device();
    write_text("\x01\x02 not yaml at all {{{\n");
    expect_ignored("garbage");
    write_text("");
    expect_ignored("empty");
    write_cache(NULL, "lanes: eight\nblock_queries: 5\nblock_vectors: 3\ntile_blocks: 7\n"
                      "slice: 99\nsegment_log2: 11\n");
    expect_ignored("a value that is not a number");
    write_cache(NULL, "lanes: 8\nblock_queries: 5\nblock_vectors: 3\ntile_blocks: 7\n"
                      "slice: 99\nsegment_log2: 11 12\n");
    expect_ignored("trailing text");
}

static void test_cache_foreign(void)
{
    open_device();
    write_cache("another device", good_params);
    expect_ignored("another device");
    char text[4096];
    snprintf(text, sizeof text,
             "lbknn_version: \"0.0.0-other\"\ndevice: \"%s\"\ndevice_version: \"%s\"\n"
             "driver: \"%s\"\n%s",
             lbk_device_name(dev), lbk_device_version(dev), lbk_device_driver(dev), good_params);
    write_text(text);
    expect_ignored("another lbknn version");
}

static void test_cache_range(void)
{
    open_device();
    write_cache(NULL, "lanes: 6\nblock_queries: 5\nblock_vectors: 3\ntile_blocks: 7\n"
                      "slice: 99\nsegment_log2: 11\n");
    expect_ignored("lanes 6");
    write_cache(NULL, "lanes: 8\nblock_queries: 500\nblock_vectors: 3\ntile_blocks: 7\n"
                      "slice: 99\nsegment_log2: 11\n");
    expect_ignored("block_queries 500");
    write_cache(NULL, "lanes: 8\nblock_queries: 5\nblock_vectors: 3\ntile_blocks: 7\n"
                      "slice: 99\nsegment_log2: -1\n");
    expect_ignored("negative segment");
}

static void test_cache_incomplete(void)
{
    open_device();
    write_cache(NULL, "lanes: 8\nblock_queries: 5\nblock_vectors: 3\n");
    expect_ignored("three parameters missing");
}

static void test_cache_unknown_key(void)
{
    open_device();
    char params[512];
    snprintf(params, sizeof params, "%sgroup_items: 8\n", good_params);
    write_cache(NULL, params);
    expect_ignored("unknown key");
}

/* Job keys over the cache over the derived values; tuning.cache false
 * ignores the file. */
static void test_precedence(void)
{
    open_device();
    lbk_job job;
    lbk_job_defaults(&job);
    lbk_tuning derived, t;
    lbk_tuning_derive(dev, &derived);
    char file[48];
    lbk_device_tuning_from_job(&job, dev, dir, &t, file, sizeof file);
    LBK_EXPECT_EQ_INT(t.source, LBK_TUNING_DERIVED, "no cache file yet");
    LBK_EXPECT_EQ_MEM(&t, &derived, sizeof t);
    LBK_EXPECT_TRUE(strncmp(file, "tune-", 5) == 0, "file %s", file);
    write_cache(NULL, good_params);
    lbk_device_tuning_from_job(&job, dev, dir, &t, file, sizeof file);
    LBK_EXPECT_EQ_INT(t.source, LBK_TUNING_CACHE);
    LBK_EXPECT_EQ_INT(t.tile_blocks, 7);
    job.tuning.tile_blocks = 2;
    job.tuning.lanes = 16;
    lbk_device_tuning_from_job(&job, dev, dir, &t, file, sizeof file);
    LBK_EXPECT_EQ_INT(t.source, LBK_TUNING_JOB);
    LBK_EXPECT_EQ_INT(t.tile_blocks, 2);
    LBK_EXPECT_EQ_INT(t.lanes, 16);
    LBK_EXPECT_EQ_INT(t.slice, 99, "the others from the cache");
    job.tuning.cache = false;
    job.tuning.tile_blocks = 0;
    job.tuning.lanes = 0;
    lbk_device_tuning_from_job(&job, dev, dir, &t, file, sizeof file);
    LBK_EXPECT_EQ_INT(t.source, LBK_TUNING_DERIVED, "tuning.cache false");
    LBK_EXPECT_EQ_STR(file, "");
}

/* A kept program whose file is damaged is built from source again, and the
 * file replaced by a good one. */
static void build_kept(const char *programs, cl_program *out)
{
    lbk_device *d = NULL;
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &d), LBK_OK);
    lbk_device_set_program_cache(d, programs);
    LBK_EXPECT_EQ_INT(lbk_device_program_kept(d, "tree_query.cl", "", out), LBK_OK);
    cl_kernel k = NULL;
    LBK_EXPECT_EQ_INT(lbk_device_kernel(*out, "tq_knn", &k), LBK_OK);
    if (k)
        clReleaseKernel(k);
    lbk_device_close(d);
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void test_program_cache_damaged(void)
{
    open_device();
    char programs[2048], cmd[4096], file[4096] = "";
    snprintf(programs, sizeof programs, "%s/programs", dir);
    cl_program p;
    build_kept(programs, &p);
    snprintf(cmd, sizeof cmd, "ls '%s'/program-*.bin 2>/dev/null | head -1", programs);
    FILE *ls = popen(cmd, "r");
    LBK_ASSERT_TRUE(ls && fgets(file, sizeof file, ls), "no program file in %s", programs);
    pclose(ls);
    file[strcspn(file, "\n")] = '\0';
    const long good = file_size(file);
    LBK_ASSERT_INT(good, >, 64);
    /* Truncated, then a flipped byte in the binary, then garbage. */
    const char *damage[] = {"truncate -s 100 '%s'",
                            "printf 'X' | dd of='%s' bs=1 seek=200 conv=notrunc 2>/dev/null",
                            "head -c 5000 /dev/urandom > '%s'"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, damage[i], file);
        LBK_ASSERT_EQ_INT(system(cmd), 0, "%s", cmd);
        build_kept(programs, &p);
        LBK_EXPECT_EQ_INT(file_size(file), good, "rewritten after damage %d", i);
    }
}

/* ---- the library reads the same cache ---- */

enum { LIB_ROWS = 3000, LIB_DIM = 24, LIB_QUERIES = 257, LIB_K = 10 };

static float lib_points[LIB_ROWS * LIB_DIM], lib_queries[LIB_QUERIES * LIB_DIM];
static int lib_warnings;
static char lib_warning[1024];

static void lib_on_log(void *user, lbknn_log_level level, const char *message)
{
    (void)user;
    if (level == LBKNN_LOG_WARNING) {
        lib_warnings++;
        snprintf(lib_warning, sizeof lib_warning, "%s", message);
    }
}

/* An index of the library with these options (NULL-terminated key, value
 * pairs) over the engine, its tuning string, and its answers. */
static void lib_search(lbknn_context *ctx, const char *engine, const char *const *set,
                       char *tuning, size_t tuning_size, int64_t *ids, float *dist)
{
    lbknn_options *o = NULL;
    LBK_ASSERT_EQ_INT(lbknn_options_create(&o), LBKNN_OK);
    LBK_ASSERT_EQ_INT(lbknn_options_set(o, "knn.engine", engine), LBKNN_OK);
    LBK_ASSERT_EQ_INT(lbknn_options_set(o, "knn.k", "10"), LBKNN_OK);
    for (int i = 0; set && set[i]; i += 2)
        LBK_ASSERT_EQ_INT(lbknn_options_set(o, set[i], set[i + 1]), LBKNN_OK, "%s",
                          lbknn_options_error(o));
    lbknn_index *ix = NULL;
    LBK_ASSERT_EQ_INT(lbknn_index_build(ctx, o, LIB_ROWS, LIB_DIM, lib_points, NULL, NULL, &ix),
                      LBKNN_OK, "%s", lbknn_context_error(ctx));
    LBK_EXPECT_EQ_STR(lbknn_index_engine(ix), engine);
    snprintf(tuning, tuning_size, "%s", lbknn_index_tuning(ix));
    LBK_ASSERT_EQ_INT(lbknn_index_search(ix, LIB_QUERIES, lib_queries, LIB_K, ids, dist),
                      LBKNN_OK, "%s", lbknn_index_error(ix));
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
}

/* Non-default parameters in the cache of a temporary XDG_CACHE_HOME: the
 * library's index runs with them (lbknn_index_tuning says so), the
 * options' tuning.* keys still win over them, tuning.cache: false and a
 * damaged file fall back to the derived ones (the latter with a warning to
 * the log callback, nothing on stderr), and the answers are the same bytes
 * whichever ran. */
static void test_library_cache(void)
{
    open_device();
    char xdg[1100], cache_dir[1200], want_dir[1200];
    snprintf(xdg, sizeof xdg, "%s/xdg", dir);
    LBK_ASSERT_EQ_INT(setenv("XDG_CACHE_HOME", xdg, 1), 0);
    LBK_ASSERT_TRUE(lbk_tune_cache_dir(cache_dir, sizeof cache_dir));
    snprintf(want_dir, sizeof want_dir, "%s/lbknn", xdg);
    LBK_EXPECT_EQ_STR(cache_dir, want_dir);
    LBK_ASSERT_TRUE(lbk_tune_cache_path(cache_dir, dev, path, sizeof path));
    const lbk_tuning tuned = {.lanes = 4,
                              .block_queries = 3,
                              .block_vectors = 2,
                              .tile_blocks = 5,
                              .slice = 40,
                              .segment_log2 = 6};
    lbk_tuning derived, job = tuned;
    lbk_tuning_derive(dev, &derived);
    job.lanes = 16;
    char want_tuned[160], want_derived[160], want_job[160], text[128];
    lbk_tuning_format(&tuned, text, sizeof text);
    snprintf(want_tuned, sizeof want_tuned, "%s (tuned)", text);
    lbk_tuning_format(&derived, text, sizeof text);
    snprintf(want_derived, sizeof want_derived, "%s (derived)", text);
    lbk_tuning_format(&job, text, sizeof text);
    snprintf(want_job, sizeof want_job, "%s (job)", text);

    lbk_test_rng rng = LBK_TEST_RNG(7);
    for (size_t i = 0; i < sizeof lib_points / sizeof *lib_points; i++)
        lib_points[i] = lbk_test_rng_unit(&rng);
    for (size_t i = 0; i < sizeof lib_queries / sizeof *lib_queries; i++)
        lib_queries[i] = lbk_test_rng_unit(&rng);
    char err_path[1200];
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    fflush(stderr);
    const int err_fd = open(err_path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    const int saved_err = dup(2);
    LBK_ASSERT_TRUE(err_fd >= 0 && saved_err >= 0);
    dup2(err_fd, 2); /* the library prints nothing, a warning included */
    lbknn_set_log_callback(lib_on_log, NULL);
    lbknn_context *ctx = NULL;
    char error[512] = "";
    const lbknn_status made = lbknn_context_create(NULL, NULL, &ctx, error, sizeof error);

    static int64_t ids[5][LIB_QUERIES * LIB_K];
    static float dist[5][LIB_QUERIES * LIB_K];
    static const char *const no_cache[] = {"tuning.cache", "false", NULL};
    static const char *const lanes[] = {"tuning.lanes", "16", NULL};
    const char *const engines[] = {"brute", "kdtree"};
    char tuning[5][160];
    for (int e = 0; made == LBKNN_OK && e < 2; e++) {
        /* The library opens a device of its own: the same first one. */
        LBK_ASSERT_EQ_INT(lbk_tune_cache_write(path, dev, &tuned, NULL), LBK_OK);
        lib_warnings = 0;
        lib_search(ctx, engines[e], NULL, tuning[0], sizeof tuning[0], ids[0], dist[0]);
        lib_search(ctx, engines[e], no_cache, tuning[1], sizeof tuning[1], ids[1], dist[1]);
        lib_search(ctx, engines[e], lanes, tuning[2], sizeof tuning[2], ids[2], dist[2]);
        LBK_EXPECT_EQ_INT(lib_warnings, 0, "a good cache warns of nothing: %s", lib_warning);
        write_cache(NULL, "lanes: 4\n"); /* incomplete */
        lib_search(ctx, engines[e], NULL, tuning[3], sizeof tuning[3], ids[3], dist[3]);
        LBK_EXPECT_EQ_INT(lib_warnings, 1, "a damaged cache is one warning");
        LBK_EXPECT_TRUE(strstr(lib_warning, "ignoring the tuning cache") != NULL, "%s",
                        lib_warning);
        LBK_EXPECT_EQ_STR(tuning[0], want_tuned, "%s: the cache's", engines[e]);
        LBK_EXPECT_EQ_STR(tuning[1], want_derived, "%s: tuning.cache false", engines[e]);
        LBK_EXPECT_EQ_STR(tuning[2], want_job, "%s: tuning.lanes over the cache", engines[e]);
        LBK_EXPECT_EQ_STR(tuning[3], want_derived, "%s: a damaged cache", engines[e]);
        for (int v = 1; v < 4; v++) {
            LBK_EXPECT_EQ_MEM(ids[v], ids[0], sizeof ids[0], "%s: ids under %s", engines[e],
                              tuning[v]);
            LBK_EXPECT_EQ_MEM(dist[v], dist[0], sizeof dist[0], "%s: distances under %s",
                              engines[e], tuning[v]);
        }
    }
    lbknn_context_destroy(ctx);
    lbknn_set_log_callback(NULL, NULL);
    fflush(stderr);
    const off_t printed = lseek(err_fd, 0, SEEK_END);
    dup2(saved_err, 2);
    close(saved_err);
    close(err_fd);
    LBK_ASSERT_EQ_INT(made, LBKNN_OK, "%s", error);
    LBK_EXPECT_EQ_INT(printed, 0, "the library printed on stderr (%s)", err_path);
}

/* No device, no work directory; the device cases take a work directory
 * (tests/tuning/CMakeLists.txt). */
static const lbk_test_case host_cases[] = {
    {"cpu_vector_bits", test_cpu_vector_bits},
};

static const lbk_test_case device_cases[] = {
    {"derived", test_derived},
    {"cache_roundtrip", test_cache_roundtrip},
    {"cache_missing", test_cache_missing},
    {"cache_corrupt", test_cache_corrupt},
    {"cache_foreign", test_cache_foreign},
    {"cache_range", test_cache_range},
    {"cache_incomplete", test_cache_incomplete},
    {"cache_unknown_key", test_cache_unknown_key},
    {"precedence", test_precedence},
    {"program_cache_damaged", test_program_cache_damaged},
    {"library_cache", test_library_cache},
};

LBK_TEST_MAIN(LBK_TEST_CASES(host_cases), LBK_TEST_CASES(device_cases))
