/* Test driver for the job-file module. Every mode checks its own oracle:
 * expected values are written here (or in the fixture's "# expect:" line),
 * never recomputed by the job layer. The modes are harness cases (lbk_test.h)
 * that take arguments:
 *
 *   config_probe load FILE [ASSIGN...]     load, --set, validate (must succeed);
 *                                          print the job
 *   config_probe bad FILE                  FILE must fail as its "# expect:" says
 *   config_probe defaults FILE             FILE must load to the default job
 *   config_probe full FILE DATA_DIR        good/full.yaml's values
 *   config_probe flow FILE                 good/flow.yaml's values
 *   config_probe set-good                  a series of good overrides
 *   config_probe set-bad ASSIGN FRAGMENT   the override must fail with FRAGMENT
 *   config_probe validate-bad FILE ASSIGN FRAGMENT
 *                                          load + set succeed, validate fails
 *   config_probe roundtrip FILE            print -> load gives the same job */
#include "job.h"
#include "lbk_test.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs fn with stderr captured into buf: the module's only output channel
 * for errors, and what a user sees. */
typedef lbk_status (*action_fn)(void *arg);

static lbk_status capture_stderr(action_fn fn, void *arg, char *buf, size_t size)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(fileno(stderr));
    if (!tmp || saved < 0) {
        perror("capture");
        exit(1);
    }
    dup2(fileno(tmp), fileno(stderr));
    lbk_status st = fn(arg);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, size - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
    fputs(buf, stderr); /* keep it visible in the test log */
    return st;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void expect_one_error(lbk_status st, const char *log, const char *needle1,
                             const char *needle2)
{
    LBK_EXPECT_EQ_INT(st, LBK_ERR_CONFIG, "status %s", lbk_status_name(st));
    LBK_EXPECT_EQ_INT(count_lines(log), 1, "error lines in: %s", log);
    LBK_EXPECT_TRUE(strstr(log, needle1) != NULL, "'%s' not in the error: %s", needle1, log);
    LBK_EXPECT_TRUE(strstr(log, needle2) != NULL, "'%s' not in the error: %s", needle2, log);
}

typedef struct {
    const char *path;
    lbk_job job;
} load_arg;

static lbk_status do_load_validate(void *p)
{
    load_arg *a = p;
    lbk_status st = lbk_job_load(a->path, &a->job);
    if (st == LBK_OK)
        st = lbk_job_validate(&a->job);
    return st;
}

static void mode_bad(const char *path)
{
    FILE *f = fopen(path, "r");
    char first[512] = "";
    LBK_ASSERT_TRUE(f && fgets(first, sizeof first, f), "cannot read %s", path);
    fclose(f);
    first[strcspn(first, "\n")] = '\0';
    unsigned line = 0, col = 0;
    int used = 0;
    LBK_ASSERT_TRUE(sscanf(first, "# expect: %u:%u: %n", &line, &col, &used) == 2 && used > 0,
                    "%s: the first line must be '# expect: LINE:COL: fragment'", path);
    const char *fragment = first + used;

    static load_arg a;
    a.path = path;
    char log[4096];
    lbk_status st = capture_stderr(do_load_validate, &a, log, sizeof log);
    char where[1200];
    snprintf(where, sizeof where, "%s:%u:%u: ", path, line, col);
    expect_one_error(st, log, where, fragment);
}

static void check_default_input(const lbk_job_input_spec *in)
{
    LBK_EXPECT_EQ_STR(in->path, "");
    LBK_EXPECT_EQ_INT(in->format, LBK_FORMAT_AUTO);
    LBK_EXPECT_EQ_STR(in->labels, "");
    LBK_EXPECT_EQ_INT(in->labels_format, LBK_FORMAT_AUTO);
    LBK_EXPECT_EQ_INT(in->label_column, -1);
    LBK_EXPECT_EQ_INT(in->delimiter, ',');
    LBK_EXPECT_EQ_INT(in->header, -1);
}

/* Everything but the source, against the documented defaults. */
static void check_defaults(const lbk_job *j)
{
    check_default_input(&j->reference);
    check_default_input(&j->query);
    LBK_EXPECT_EQ_U64(j->synthetic.points, 100000u);
    LBK_EXPECT_EQ_U64(j->synthetic.queries, 10000u);
    LBK_EXPECT_EQ_INT(j->synthetic.dim, 16);
    LBK_EXPECT_EQ_INT(j->synthetic.classes, 10);
    LBK_EXPECT_EQ_U64(j->synthetic.seed, 42u);
    LBK_EXPECT_EQ_DOUBLE(j->synthetic.spread, 2.0);
    LBK_EXPECT_EQ_INT(j->knn.k, 5);
    LBK_EXPECT_EQ_INT(j->knn.metric, LBK_METRIC_L2);
    LBK_EXPECT_EQ_INT(j->knn.weights, LBK_WEIGHTS_UNIFORM);
    LBK_EXPECT_EQ_INT(j->knn.engine, LBK_ENGINE_AUTO);
    LBK_EXPECT_EQ_DOUBLE(j->knn.temperature, 0.07);
    LBK_EXPECT_EQ_INT(j->device.type, LBK_DEVICE_ANY);
    LBK_EXPECT_EQ_U64(j->device.batch, 0u);
    LBK_EXPECT_EQ_INT(j->device.groups, 0);
    LBK_EXPECT_EQ_U64(j->device.memory_mb, 0u);
    LBK_EXPECT_EQ_INT(j->device.list_len, 0);
    LBK_EXPECT_EQ_INT(j->device.threads, 0);
    LBK_EXPECT_EQ_INT(j->tree.split, LBK_SPLIT_ROUND_ROBIN);
    LBK_EXPECT_EQ_INT(j->tree.sort, LBK_SORT_AUTO);
    LBK_EXPECT_EQ_INT(j->tree.verify, 0);
    LBK_EXPECT_EQ_INT(j->tuning.cache, 1);
    LBK_EXPECT_EQ_INT(j->tuning.lanes, 0);
    LBK_EXPECT_EQ_INT(j->tuning.block_queries, 0);
    LBK_EXPECT_EQ_INT(j->tuning.block_vectors, 0);
    LBK_EXPECT_EQ_INT(j->tuning.tile_blocks, 0);
    LBK_EXPECT_EQ_INT(j->tuning.slice, 0);
    LBK_EXPECT_EQ_INT(j->tuning.segment_log2, 0);
    LBK_EXPECT_EQ_INT(j->mpi.merge, LBK_MERGE_REDUCE);
    LBK_EXPECT_EQ_INT(j->mpi.partition, LBK_PARTITION_AUTO);
    LBK_EXPECT_EQ_STR(j->output.predictions, "");
    LBK_EXPECT_EQ_STR(j->output.probabilities, "");
    LBK_EXPECT_EQ_STR(j->output.neighbors, "");
    LBK_EXPECT_EQ_STR(j->output.distances, "");
    LBK_EXPECT_EQ_STR(j->output.report, "");
}

static void mode_defaults(const char *path)
{
    lbk_job job;
    lbk_job_defaults(&job);
    LBK_EXPECT_EQ_STR(job.source, "<built-in default>");
    check_defaults(&job);
    lbk_status st = lbk_job_load(path, &job);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "load %s: %s", path, lbk_status_name(st));
    LBK_EXPECT_EQ_STR(job.source, path);
    check_defaults(&job);
    LBK_EXPECT_EQ_INT(lbk_job_validate(&job), LBK_OK, "validate failed");
}

static void mode_full(const char *path, const char *data_dir)
{
    lbk_job j;
    lbk_status st = lbk_job_load(path, &j);
    LBK_ASSERT_EQ_INT(st, LBK_OK, "load %s: %s", path, lbk_status_name(st));
    char want[2048];

    snprintf(want, sizeof want, "%s/data/ref points.csv", data_dir);
    LBK_EXPECT_EQ_STR(j.reference.path, want);
    LBK_EXPECT_EQ_INT(j.reference.format, LBK_FORMAT_CSV);
    LBK_EXPECT_EQ_STR(j.reference.labels, "");
    LBK_EXPECT_EQ_INT(j.reference.labels_format, LBK_FORMAT_TEXT);
    LBK_EXPECT_EQ_INT(j.reference.label_column, 4);
    LBK_EXPECT_EQ_INT(j.reference.delimiter, ';');
    LBK_EXPECT_EQ_INT(j.reference.header, 1);

    LBK_EXPECT_EQ_STR(j.query.path, "/abs/queries.fvecs");
    LBK_EXPECT_EQ_INT(j.query.format, LBK_FORMAT_FVECS);
    snprintf(want, sizeof want, "%s/labels/q.ivecs", data_dir);
    LBK_EXPECT_EQ_STR(j.query.labels, want);
    LBK_EXPECT_EQ_INT(j.query.labels_format, LBK_FORMAT_IVECS);
    LBK_EXPECT_EQ_INT(j.query.label_column, -1);
    LBK_EXPECT_EQ_INT(j.query.delimiter, '\t');
    LBK_EXPECT_EQ_INT(j.query.header, 0);

    LBK_EXPECT_EQ_U64(j.synthetic.points, 5000000000ull);
    LBK_EXPECT_EQ_U64(j.synthetic.queries, 123u);
    LBK_EXPECT_EQ_INT(j.synthetic.dim, 4096);
    LBK_EXPECT_EQ_INT(j.synthetic.classes, 100000);
    LBK_EXPECT_EQ_U64(j.synthetic.seed, 9223372036854775807ull);
    LBK_EXPECT_EQ_DOUBLE(j.synthetic.spread, 0.25);

    LBK_EXPECT_EQ_INT(j.knn.k, 1024);
    LBK_EXPECT_EQ_INT(j.knn.metric, LBK_METRIC_LINF);
    LBK_EXPECT_EQ_INT(j.knn.weights, LBK_WEIGHTS_DISTANCE);
    LBK_EXPECT_EQ_INT(j.knn.engine, LBK_ENGINE_KDTREE);
    LBK_EXPECT_EQ_DOUBLE(j.knn.temperature, 0.5);

    LBK_EXPECT_EQ_INT(j.device.type, LBK_DEVICE_CPU);
    LBK_EXPECT_EQ_U64(j.device.batch, 4096u);
    LBK_EXPECT_EQ_INT(j.device.groups, 32);
    LBK_EXPECT_EQ_U64(j.device.memory_mb, 2048u);
    LBK_EXPECT_EQ_INT(j.device.list_len, 3);
    LBK_EXPECT_EQ_INT(j.device.list[0], 1);
    LBK_EXPECT_EQ_INT(j.device.list[1], 0);
    LBK_EXPECT_EQ_INT(j.device.list[2], 1);
    LBK_EXPECT_EQ_INT(j.device.threads, -2);

    LBK_EXPECT_EQ_INT(j.tree.split, LBK_SPLIT_WIDEST);
    LBK_EXPECT_EQ_INT(j.tree.sort, LBK_SORT_RADIX);
    LBK_EXPECT_EQ_INT(j.tree.verify, 1);
    LBK_EXPECT_EQ_INT(j.tuning.cache, 0);
    LBK_EXPECT_EQ_INT(j.tuning.lanes, 8);
    LBK_EXPECT_EQ_INT(j.tuning.block_queries, 6);
    LBK_EXPECT_EQ_INT(j.tuning.block_vectors, 2);
    LBK_EXPECT_EQ_INT(j.tuning.tile_blocks, 4);
    LBK_EXPECT_EQ_INT(j.tuning.slice, 256);
    LBK_EXPECT_EQ_INT(j.tuning.segment_log2, 12);
    LBK_EXPECT_EQ_INT(j.mpi.merge, LBK_MERGE_REDUCE_SCATTER);
    LBK_EXPECT_EQ_INT(j.mpi.partition, LBK_PARTITION_REPLICATE);

    /* Outputs stay relative: they resolve against the working directory. */
    LBK_EXPECT_EQ_STR(j.output.predictions, "out/predictions.txt");
    LBK_EXPECT_EQ_STR(j.output.probabilities, "out/probabilities.csv");
    LBK_EXPECT_EQ_STR(j.output.neighbors, "out/neighbors.ivecs");
    LBK_EXPECT_EQ_STR(j.output.distances, "/tmp/d.fvecs");
    LBK_EXPECT_EQ_STR(j.output.report, "report \"quoted\".yaml");
    LBK_EXPECT_EQ_INT(lbk_job_validate(&j), LBK_OK, "validate failed");
}

static void mode_flow(const char *path)
{
    lbk_job j;
    lbk_status st = lbk_job_load(path, &j);
    LBK_ASSERT_EQ_INT(st, LBK_OK, "load %s: %s", path, lbk_status_name(st));
    LBK_EXPECT_EQ_INT(j.knn.k, 7);
    LBK_EXPECT_EQ_INT(j.knn.metric, LBK_METRIC_L1);
    LBK_EXPECT_EQ_INT(j.knn.weights, LBK_WEIGHTS_UNIFORM);
    LBK_EXPECT_EQ_INT(j.tree.verify, 1);
    LBK_EXPECT_EQ_INT(j.device.type, LBK_DEVICE_GPU);
    LBK_EXPECT_EQ_INT(j.device.list_len, 2);
    LBK_EXPECT_EQ_INT(j.device.list[0], 3);
    LBK_EXPECT_EQ_INT(j.device.list[1], 2);
    LBK_EXPECT_EQ_STR(j.reference.path, "/data/r.csv");
    LBK_EXPECT_EQ_INT(j.reference.header, 0);
    LBK_EXPECT_EQ_INT(j.reference.delimiter, ' ');
    LBK_EXPECT_EQ_STR(j.query.path, "/data/q.csv");
    LBK_EXPECT_EQ_INT(j.query.header, -1);
    LBK_EXPECT_EQ_U64(j.synthetic.seed, 0u);
    LBK_EXPECT_EQ_DOUBLE(j.synthetic.spread, 1e-3);
    LBK_EXPECT_EQ_STR(j.output.report, "");
    /* Sections given as null are left at their defaults. */
    LBK_EXPECT_EQ_INT(j.mpi.merge, LBK_MERGE_REDUCE);
}

static void mode_set_good(void)
{
    lbk_job j;
    lbk_job_defaults(&j);
    const char *sets[] = {
        "knn.k=7",
        "knn.metric=l1",
        "knn.weights=distance",
        "knn.engine=brute",
        "device.list=[2, 0]",
        "device.batch=100000",
        "device.type=cpu",
        "tree.verify=yes",
        "tree.sort=bitonic",
        "synthetic.spread=0.5",
        "synthetic.points=+77",
        "reference.path=rel/ref #1.csv", /* paths are literal: no YAML comment */
        "reference.label_column=0",
        "reference.delimiter=\"\\t\"",
        "reference.header=auto",
        "query.path=/q.csv",
        "output.report=", /* empty = not written */
        "output.neighbors=nb: out.npy",
        "mpi.merge=reduce_scatter",
        "task=search", /* the top-level key: no section */
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        LBK_EXPECT_EQ_INT(lbk_job_set(&j, sets[i]), LBK_OK, "--set %s failed", sets[i]);
    LBK_EXPECT_EQ_INT(j.knn.k, 7);
    LBK_EXPECT_EQ_INT(j.knn.metric, LBK_METRIC_L1);
    LBK_EXPECT_EQ_INT(j.knn.weights, LBK_WEIGHTS_DISTANCE);
    LBK_EXPECT_EQ_INT(j.knn.engine, LBK_ENGINE_BRUTE);
    LBK_EXPECT_EQ_INT(j.task, LBK_TASK_SEARCH);
    LBK_EXPECT_EQ_INT(j.device.list_len, 2);
    LBK_EXPECT_EQ_INT(j.device.list[0], 2);
    LBK_EXPECT_EQ_INT(j.device.list[1], 0);
    LBK_EXPECT_EQ_U64(j.device.batch, 100000u);
    LBK_EXPECT_EQ_INT(j.device.type, LBK_DEVICE_CPU);
    LBK_EXPECT_EQ_INT(j.tree.verify, 1);
    LBK_EXPECT_EQ_INT(j.tree.sort, LBK_SORT_BITONIC);
    LBK_EXPECT_EQ_DOUBLE(j.synthetic.spread, 0.5);
    LBK_EXPECT_EQ_U64(j.synthetic.points, 77u);
    /* --set paths are relative to the working directory: kept as typed. */
    LBK_EXPECT_EQ_STR(j.reference.path, "rel/ref #1.csv");
    LBK_EXPECT_EQ_INT(j.reference.label_column, 0);
    LBK_EXPECT_EQ_INT(j.reference.delimiter, '\t');
    LBK_EXPECT_EQ_INT(j.reference.header, -1);
    LBK_EXPECT_EQ_STR(j.query.path, "/q.csv");
    LBK_EXPECT_EQ_STR(j.output.report, "");
    LBK_EXPECT_EQ_STR(j.output.neighbors, "nb: out.npy");
    LBK_EXPECT_EQ_INT(j.mpi.merge, LBK_MERGE_REDUCE_SCATTER);
    LBK_EXPECT_EQ_INT(lbk_job_validate(&j), LBK_OK, "validate failed");

    /* A failed override leaves the job as it was. */
    LBK_EXPECT_EQ_INT(lbk_job_set(&j, "knn.k=0"), LBK_ERR_CONFIG, "knn.k=0 accepted");
    LBK_EXPECT_EQ_INT(j.knn.k, 7);
}

typedef struct {
    lbk_job *job;
    const char *assign;
} set_arg;

static lbk_status do_set(void *p)
{
    set_arg *a = p;
    return lbk_job_set(a->job, a->assign);
}

static void mode_set_bad(const char *assign, const char *fragment)
{
    lbk_job j;
    lbk_job_defaults(&j);
    set_arg a = {&j, assign};
    char log[4096];
    lbk_status st = capture_stderr(do_set, &a, log, sizeof log);
    char where[1200];
    snprintf(where, sizeof where, "--set %s: ", assign);
    expect_one_error(st, log, where, fragment);
}

static lbk_status do_validate(void *p) { return lbk_job_validate(p); }

static void mode_validate_bad(const char *path, const char *assign, const char *fragment)
{
    static lbk_job j;
    LBK_EXPECT_EQ_INT(lbk_job_load(path, &j), LBK_OK, "load %s failed", path);
    LBK_EXPECT_EQ_INT(lbk_job_set(&j, assign), LBK_OK, "--set %s failed", assign);
    char log[4096];
    lbk_status st = capture_stderr(do_validate, &j, log, sizeof log);
    char where[1200];
    snprintf(where, sizeof where, "%s: ", path);
    expect_one_error(st, log, where, fragment);
}

static void same_input(const char *name, const lbk_job_input_spec *a, const lbk_job_input_spec *b)
{
    LBK_EXPECT_EQ_STR(a->path, b->path, "%s.path differs", name);
    LBK_EXPECT_EQ_INT(a->format, b->format, "%s.format differs", name);
    LBK_EXPECT_EQ_STR(a->labels, b->labels, "%s.labels differs", name);
    LBK_EXPECT_EQ_INT(a->labels_format, b->labels_format, "%s.labels_format differs", name);
    LBK_EXPECT_EQ_INT(a->label_column, b->label_column, "%s.label_column differs", name);
    LBK_EXPECT_EQ_INT(a->delimiter, b->delimiter, "%s.delimiter differs", name);
    LBK_EXPECT_EQ_INT(a->header, b->header, "%s.header differs", name);
}

static void same_job(const lbk_job *a, const lbk_job *b)
{
    same_input("reference", &a->reference, &b->reference);
    same_input("query", &a->query, &b->query);
    LBK_EXPECT_EQ_U64(a->synthetic.points, b->synthetic.points, "synthetic.points differs");
    LBK_EXPECT_EQ_U64(a->synthetic.queries, b->synthetic.queries, "synthetic.queries differs");
    LBK_EXPECT_EQ_INT(a->synthetic.dim, b->synthetic.dim, "synthetic.dim differs");
    LBK_EXPECT_EQ_INT(a->synthetic.classes, b->synthetic.classes, "synthetic.classes differs");
    LBK_EXPECT_EQ_U64(a->synthetic.seed, b->synthetic.seed, "synthetic.seed differs");
    LBK_EXPECT_EQ_DOUBLE(a->synthetic.spread, b->synthetic.spread, "synthetic.spread differs");
    LBK_EXPECT_EQ_INT(a->knn.k, b->knn.k, "knn.k differs");
    LBK_EXPECT_EQ_INT(a->knn.metric, b->knn.metric, "knn.metric differs");
    LBK_EXPECT_EQ_INT(a->knn.weights, b->knn.weights, "knn.weights differs");
    LBK_EXPECT_EQ_INT(a->knn.engine, b->knn.engine, "knn.engine differs");
    LBK_EXPECT_EQ_DOUBLE(a->knn.temperature, b->knn.temperature, "knn.temperature differs");
    LBK_EXPECT_EQ_INT(a->device.type, b->device.type, "device.type differs");
    LBK_EXPECT_EQ_U64(a->device.batch, b->device.batch, "device.batch differs");
    LBK_EXPECT_EQ_INT(a->device.groups, b->device.groups, "device.groups differs");
    LBK_EXPECT_EQ_U64(a->device.memory_mb, b->device.memory_mb, "device.memory_mb differs");
    LBK_EXPECT_EQ_INT(a->device.list_len, b->device.list_len, "device.list_len differs");
    LBK_EXPECT_EQ_INT(a->device.threads, b->device.threads, "device.threads differs");
    for (int i = 0; i < a->device.list_len && i < LBK_JOB_MAX_DEVICE_LIST; i++)
        LBK_EXPECT_EQ_INT(a->device.list[i], b->device.list[i], "device.list[%d] differs", i);
    LBK_EXPECT_EQ_INT(a->tree.split, b->tree.split, "tree.split differs");
    LBK_EXPECT_EQ_INT(a->tree.sort, b->tree.sort, "tree.sort differs");
    LBK_EXPECT_EQ_INT(a->tree.verify, b->tree.verify, "tree.verify differs");
    LBK_EXPECT_EQ_INT(a->tuning.cache, b->tuning.cache, "tuning.cache differs");
    LBK_EXPECT_EQ_INT(a->tuning.lanes, b->tuning.lanes, "tuning.lanes differs");
    LBK_EXPECT_EQ_INT(a->tuning.block_queries, b->tuning.block_queries,
                      "tuning.block_queries differs");
    LBK_EXPECT_EQ_INT(a->tuning.block_vectors, b->tuning.block_vectors,
                      "tuning.block_vectors differs");
    LBK_EXPECT_EQ_INT(a->tuning.tile_blocks, b->tuning.tile_blocks, "tuning.tile_blocks differs");
    LBK_EXPECT_EQ_INT(a->tuning.slice, b->tuning.slice, "tuning.slice differs");
    LBK_EXPECT_EQ_INT(a->tuning.segment_log2, b->tuning.segment_log2,
                      "tuning.segment_log2 differs");
    LBK_EXPECT_EQ_INT(a->mpi.merge, b->mpi.merge, "mpi.merge differs");
    LBK_EXPECT_EQ_INT(a->mpi.partition, b->mpi.partition, "mpi.partition differs");
    LBK_EXPECT_EQ_STR(a->output.predictions, b->output.predictions, "predictions differs");
    LBK_EXPECT_EQ_STR(a->output.probabilities, b->output.probabilities, "probabilities differs");
    LBK_EXPECT_EQ_STR(a->output.neighbors, b->output.neighbors, "neighbors differs");
    LBK_EXPECT_EQ_STR(a->output.distances, b->output.distances, "distances differs");
    LBK_EXPECT_EQ_STR(a->output.report, b->output.report, "report differs");
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *copy = malloc(n + 1);
    if (copy)
        memcpy(copy, buf, n + 1);
    return copy;
}

/* The printed job must load back to the same job, and printing that gives
 * the same text (indented printing is checked by stripping the indent). */
static void mode_roundtrip(const char *path)
{
    static lbk_job a, b;
    lbk_status st = lbk_job_load(path, &a);
    LBK_ASSERT_EQ_INT(st, LBK_OK, "load %s: %s", path, lbk_status_name(st));
    /* Exercise odd bytes in strings too. */
    LBK_EXPECT_EQ_INT(lbk_job_set(&a, "output.report=we\\ird \"name\"\x01:#.txt"), LBK_OK);

    char p1[] = "/tmp/lbk_config_rt1_XXXXXX";
    char p2[] = "/tmp/lbk_config_rt2_XXXXXX";
    int fd1 = mkstemp(p1), fd2 = mkstemp(p2);
    LBK_ASSERT_TRUE(fd1 >= 0 && fd2 >= 0, "mkstemp");
    FILE *f1 = fdopen(fd1, "w");
    lbk_job_print(&a, f1, 0);
    fclose(f1);
    st = lbk_job_load(p1, &b);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "printed job does not load: %s", lbk_status_name(st));
    if (st == LBK_OK) {
        same_job(&a, &b);
        FILE *f2 = fdopen(fd2, "w");
        fprintf(f2, "job:\n");
        lbk_job_print(&b, f2, 4);
        fclose(f2);
        char *t1 = slurp(p1), *t2 = slurp(p2);
        LBK_EXPECT_TRUE(t1 && t2, "read back");
        if (t1 && t2) {
            /* t2 = "job:\n" + every line of t1 indented by 4. */
            char *expect = malloc(strlen(t1) * 2 + 16);
            LBK_ASSERT_TRUE(expect != NULL, "out of memory");
            size_t at = (size_t)sprintf(expect, "job:\n");
            for (char *line = t1; *line;) {
                char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
                at += (size_t)sprintf(expect + at, "    %.*s", (int)len, line);
                line += len;
            }
            LBK_EXPECT_EQ_STR(t2, expect, "the second print, indented");
            free(expect);
        }
        free(t1);
        free(t2);
    }
    unlink(p1);
    unlink(p2);
}

/* Loads, applies every override, validates and prints, as lbknn would. */
static void mode_load(void)
{
    static lbk_job j;
    lbk_status st = lbk_job_load(lbk_test_arg(0), &j);
    for (int i = 1; st == LBK_OK && i < lbk_test_arg_count(); i++)
        st = lbk_job_set(&j, lbk_test_arg(i));
    if (st == LBK_OK)
        st = lbk_job_validate(&j);
    if (LBK_EXPECT_EQ_INT(st, LBK_OK, "%s", lbk_status_name(st)))
        lbk_job_print(&j, stdout, 0);
}

/* ---- the cases: each takes its arguments after the name ---- */

static void case_load(void)
{
    lbk_test_args(1, -1, "FILE [ASSIGN...]");
    mode_load();
}

static void case_bad(void)
{
    lbk_test_args(1, 1, "FILE");
    mode_bad(lbk_test_arg(0));
}

static void case_defaults(void)
{
    lbk_test_args(1, 1, "FILE");
    mode_defaults(lbk_test_arg(0));
}

static void case_full(void)
{
    lbk_test_args(2, 2, "FILE DATA_DIR");
    mode_full(lbk_test_arg(0), lbk_test_arg(1));
}

static void case_flow(void)
{
    lbk_test_args(1, 1, "FILE");
    mode_flow(lbk_test_arg(0));
}

static void case_set_good(void)
{
    lbk_test_args(0, 0, "");
    mode_set_good();
}

static void case_set_bad(void)
{
    lbk_test_args(2, 2, "ASSIGN FRAGMENT");
    mode_set_bad(lbk_test_arg(0), lbk_test_arg(1));
}

static void case_validate_bad(void)
{
    lbk_test_args(3, 3, "FILE ASSIGN FRAGMENT");
    mode_validate_bad(lbk_test_arg(0), lbk_test_arg(1), lbk_test_arg(2));
}

static void case_roundtrip(void)
{
    lbk_test_args(1, 1, "FILE");
    mode_roundtrip(lbk_test_arg(0));
}

static const lbk_test_case cases[] = {
    {"load", case_load},           {"bad", case_bad},
    {"defaults", case_defaults},   {"full", case_full},
    {"flow", case_flow},           {"set-good", case_set_good},
    {"set-bad", case_set_bad},     {"validate-bad", case_validate_bad},
    {"roundtrip", case_roundtrip},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
