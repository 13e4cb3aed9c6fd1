/* Test driver for the job-file module. Every mode checks its own oracle:
 * expected values are written here (or in the fixture's "# expect:" line),
 * never recomputed by config.c.
 *
 *   config_probe load FILE [ASSIGN...]     load, --set, validate; print the job;
 *                                          exit 0 / 2 like lbknn would
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
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

static void check(int ok, const char *what, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *what, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, what);
    printf("FAIL: ");
    vprintf(what, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

#define EQ_INT(a, b) check((long long)(a) == (long long)(b), "%s = %lld, expected %lld", #a, \
                           (long long)(a), (long long)(b))
#define EQ_U64(a, b) check((a) == (b), "%s = %llu, expected %llu", #a, \
                           (unsigned long long)(a), (unsigned long long)(b))
#define EQ_DBL(a, b) check((a) == (b), "%s = %.17g, expected %.17g", #a, (double)(a), (double)(b))
#define EQ_STR(a, b) check(strcmp((a), (b)) == 0, "%s = '%s', expected '%s'", #a, (a), (b))

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
    check(st == LBK_ERR_CONFIG, "status %s, expected LBK_ERR_CONFIG", lbk_status_name(st));
    check(count_lines(log) == 1, "expected exactly one error line, got %d", count_lines(log));
    check(strstr(log, needle1) != NULL, "error does not contain '%s'", needle1);
    check(strstr(log, needle2) != NULL, "error does not contain '%s'", needle2);
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

static int mode_bad(const char *path)
{
    FILE *f = fopen(path, "r");
    char first[512] = "";
    if (!f || !fgets(first, sizeof first, f)) {
        printf("cannot read %s\n", path);
        return 1;
    }
    fclose(f);
    first[strcspn(first, "\n")] = '\0';
    unsigned line = 0, col = 0;
    int used = 0;
    if (sscanf(first, "# expect: %u:%u: %n", &line, &col, &used) != 2 || used == 0) {
        printf("%s: first line must be '# expect: LINE:COL: fragment'\n", path);
        return 1;
    }
    const char *fragment = first + used;

    static load_arg a;
    a.path = path;
    char log[4096];
    lbk_status st = capture_stderr(do_load_validate, &a, log, sizeof log);
    char where[1200];
    snprintf(where, sizeof where, "%s:%u:%u: ", path, line, col);
    expect_one_error(st, log, where, fragment);
    return failures ? 1 : 0;
}

static void check_default_input(const lbk_input_spec *in)
{
    EQ_STR(in->path, "");
    EQ_INT(in->format, LBK_FORMAT_AUTO);
    EQ_STR(in->labels, "");
    EQ_INT(in->labels_format, LBK_FORMAT_AUTO);
    EQ_INT(in->label_column, -1);
    EQ_INT(in->delimiter, ',');
    EQ_INT(in->header, -1);
}

/* Everything but the source, against the documented defaults. */
static void check_defaults(const lbk_job *j)
{
    check_default_input(&j->reference);
    check_default_input(&j->query);
    EQ_U64(j->synthetic.points, 100000u);
    EQ_U64(j->synthetic.queries, 10000u);
    EQ_INT(j->synthetic.dim, 16);
    EQ_INT(j->synthetic.classes, 10);
    EQ_U64(j->synthetic.seed, 42u);
    EQ_DBL(j->synthetic.spread, 2.0);
    EQ_INT(j->knn.k, 5);
    EQ_INT(j->knn.metric, LBK_METRIC_L2);
    EQ_INT(j->knn.weights, LBK_WEIGHTS_UNIFORM);
    EQ_INT(j->knn.engine, LBK_ENGINE_AUTO);
    EQ_INT(j->device.type, LBK_DEVICE_ANY);
    EQ_U64(j->device.batch, 0u);
    EQ_INT(j->device.groups, 0);
    EQ_U64(j->device.memory_mb, 0u);
    EQ_INT(j->device.list_len, 0);
    EQ_INT(j->tree.split, LBK_SPLIT_ROUND_ROBIN);
    EQ_INT(j->tree.sort, LBK_SORT_AUTO);
    EQ_INT(j->tree.verify, 0);
    EQ_INT(j->mpi.merge, LBK_MERGE_REDUCE);
    EQ_INT(j->mpi.partition, LBK_PARTITION_SHARD);
    EQ_STR(j->output.predictions, "");
    EQ_STR(j->output.neighbors, "");
    EQ_STR(j->output.distances, "");
    EQ_STR(j->output.report, "");
}

static int mode_defaults(const char *path)
{
    lbk_job job;
    lbk_job_defaults(&job);
    EQ_STR(job.source, "<built-in default>");
    check_defaults(&job);
    lbk_status st = lbk_job_load(path, &job);
    check(st == LBK_OK, "load %s: %s", path, lbk_status_name(st));
    EQ_STR(job.source, path);
    check_defaults(&job);
    check(lbk_job_validate(&job) == LBK_OK, "validate failed");
    return failures ? 1 : 0;
}

static int mode_full(const char *path, const char *data_dir)
{
    lbk_job j;
    lbk_status st = lbk_job_load(path, &j);
    check(st == LBK_OK, "load %s: %s", path, lbk_status_name(st));
    if (st != LBK_OK)
        return 1;
    char want[2048];

    snprintf(want, sizeof want, "%s/data/ref points.csv", data_dir);
    EQ_STR(j.reference.path, want);
    EQ_INT(j.reference.format, LBK_FORMAT_CSV);
    EQ_STR(j.reference.labels, "");
    EQ_INT(j.reference.labels_format, LBK_FORMAT_TEXT);
    EQ_INT(j.reference.label_column, 4);
    EQ_INT(j.reference.delimiter, ';');
    EQ_INT(j.reference.header, 1);

    EQ_STR(j.query.path, "/abs/queries.fvecs");
    EQ_INT(j.query.format, LBK_FORMAT_FVECS);
    snprintf(want, sizeof want, "%s/labels/q.ivecs", data_dir);
    EQ_STR(j.query.labels, want);
    EQ_INT(j.query.labels_format, LBK_FORMAT_IVECS);
    EQ_INT(j.query.label_column, -1);
    EQ_INT(j.query.delimiter, '\t');
    EQ_INT(j.query.header, 0);

    EQ_U64(j.synthetic.points, 5000000000ull);
    EQ_U64(j.synthetic.queries, 123u);
    EQ_INT(j.synthetic.dim, 4096);
    EQ_INT(j.synthetic.classes, 100000);
    EQ_U64(j.synthetic.seed, 9223372036854775807ull);
    EQ_DBL(j.synthetic.spread, 0.25);

    EQ_INT(j.knn.k, 1024);
    EQ_INT(j.knn.metric, LBK_METRIC_LINF);
    EQ_INT(j.knn.weights, LBK_WEIGHTS_DISTANCE);
    EQ_INT(j.knn.engine, LBK_ENGINE_KDTREE);

    EQ_INT(j.device.type, LBK_DEVICE_CPU);
    EQ_U64(j.device.batch, 4096u);
    EQ_INT(j.device.groups, 32);
    EQ_U64(j.device.memory_mb, 2048u);
    EQ_INT(j.device.list_len, 3);
    EQ_INT(j.device.list[0], 1);
    EQ_INT(j.device.list[1], 0);
    EQ_INT(j.device.list[2], 1);

    EQ_INT(j.tree.split, LBK_SPLIT_WIDEST);
    EQ_INT(j.tree.sort, LBK_SORT_RADIX);
    EQ_INT(j.tree.verify, 1);
    EQ_INT(j.mpi.merge, LBK_MERGE_REDUCE_SCATTER);
    EQ_INT(j.mpi.partition, LBK_PARTITION_REPLICATE);

    /* Outputs stay relative: they resolve against the working directory. */
    EQ_STR(j.output.predictions, "out/predictions.txt");
    EQ_STR(j.output.neighbors, "out/neighbors.ivecs");
    EQ_STR(j.output.distances, "/tmp/d.fvecs");
    EQ_STR(j.output.report, "report \"quoted\".yaml");
    check(lbk_job_validate(&j) == LBK_OK, "validate failed");
    return failures ? 1 : 0;
}

static int mode_flow(const char *path)
{
    lbk_job j;
    lbk_status st = lbk_job_load(path, &j);
    check(st == LBK_OK, "load %s: %s", path, lbk_status_name(st));
    if (st != LBK_OK)
        return 1;
    EQ_INT(j.knn.k, 7);
    EQ_INT(j.knn.metric, LBK_METRIC_L1);
    EQ_INT(j.knn.weights, LBK_WEIGHTS_UNIFORM);
    EQ_INT(j.tree.verify, 1);
    EQ_INT(j.device.type, LBK_DEVICE_GPU);
    EQ_INT(j.device.list_len, 2);
    EQ_INT(j.device.list[0], 3);
    EQ_INT(j.device.list[1], 2);
    EQ_STR(j.reference.path, "/data/r.csv");
    EQ_INT(j.reference.header, 0);
    EQ_INT(j.reference.delimiter, ' ');
    EQ_STR(j.query.path, "/data/q.csv");
    EQ_INT(j.query.header, -1);
    EQ_U64(j.synthetic.seed, 0u);
    EQ_DBL(j.synthetic.spread, 1e-3);
    EQ_STR(j.output.report, "");
    /* Sections given as null are left at their defaults. */
    EQ_INT(j.mpi.merge, LBK_MERGE_REDUCE);
    return failures ? 1 : 0;
}

static int mode_set_good(void)
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
        "reference.path=rel/ref #1.csv",  /* paths are literal: no YAML comment */
        "reference.label_column=0",
        "reference.delimiter=\"\\t\"",
        "reference.header=auto",
        "query.path=/q.csv",
        "output.report=",                 /* empty = not written */
        "output.predictions=pred: out.txt",
        "mpi.merge=reduce_scatter",
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        check(lbk_job_set(&j, sets[i]) == LBK_OK, "--set %s failed", sets[i]);
    EQ_INT(j.knn.k, 7);
    EQ_INT(j.knn.metric, LBK_METRIC_L1);
    EQ_INT(j.knn.weights, LBK_WEIGHTS_DISTANCE);
    EQ_INT(j.knn.engine, LBK_ENGINE_BRUTE);
    EQ_INT(j.device.list_len, 2);
    EQ_INT(j.device.list[0], 2);
    EQ_INT(j.device.list[1], 0);
    EQ_U64(j.device.batch, 100000u);
    EQ_INT(j.device.type, LBK_DEVICE_CPU);
    EQ_INT(j.tree.verify, 1);
    EQ_INT(j.tree.sort, LBK_SORT_BITONIC);
    EQ_DBL(j.synthetic.spread, 0.5);
    EQ_U64(j.synthetic.points, 77u);
    /* --set paths are relative to the working directory: kept as typed. */
    EQ_STR(j.reference.path, "rel/ref #1.csv");
    EQ_INT(j.reference.label_column, 0);
    EQ_INT(j.reference.delimiter, '\t');
    EQ_INT(j.reference.header, -1);
    EQ_STR(j.query.path, "/q.csv");
    EQ_STR(j.output.report, "");
    EQ_STR(j.output.predictions, "pred: out.txt");
    EQ_INT(j.mpi.merge, LBK_MERGE_REDUCE_SCATTER);
    check(lbk_job_validate(&j) == LBK_OK, "validate failed");

    /* A failed override leaves the job as it was. */
    check(lbk_job_set(&j, "knn.k=0") == LBK_ERR_CONFIG, "knn.k=0 accepted");
    EQ_INT(j.knn.k, 7);
    return failures ? 1 : 0;
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

static int mode_set_bad(const char *assign, const char *fragment)
{
    lbk_job j;
    lbk_job_defaults(&j);
    set_arg a = {&j, assign};
    char log[4096];
    lbk_status st = capture_stderr(do_set, &a, log, sizeof log);
    char where[1200];
    snprintf(where, sizeof where, "--set %s: ", assign);
    expect_one_error(st, log, where, fragment);
    return failures ? 1 : 0;
}

static lbk_status do_validate(void *p) { return lbk_job_validate(p); }

static int mode_validate_bad(const char *path, const char *assign, const char *fragment)
{
    static lbk_job j;
    check(lbk_job_load(path, &j) == LBK_OK, "load %s failed", path);
    check(lbk_job_set(&j, assign) == LBK_OK, "--set %s failed", assign);
    char log[4096];
    lbk_status st = capture_stderr(do_validate, &j, log, sizeof log);
    char where[1200];
    snprintf(where, sizeof where, "%s: ", path);
    expect_one_error(st, log, where, fragment);
    return failures ? 1 : 0;
}

static void same_input(const char *name, const lbk_input_spec *a, const lbk_input_spec *b)
{
    check(strcmp(a->path, b->path) == 0, "%s.path differs", name);
    check(a->format == b->format, "%s.format differs", name);
    check(strcmp(a->labels, b->labels) == 0, "%s.labels differs", name);
    check(a->labels_format == b->labels_format, "%s.labels_format differs", name);
    check(a->label_column == b->label_column, "%s.label_column differs", name);
    check(a->delimiter == b->delimiter, "%s.delimiter differs", name);
    check(a->header == b->header, "%s.header differs", name);
}

static void same_job(const lbk_job *a, const lbk_job *b)
{
    same_input("reference", &a->reference, &b->reference);
    same_input("query", &a->query, &b->query);
    check(a->synthetic.points == b->synthetic.points, "synthetic.points differs");
    check(a->synthetic.queries == b->synthetic.queries, "synthetic.queries differs");
    check(a->synthetic.dim == b->synthetic.dim, "synthetic.dim differs");
    check(a->synthetic.classes == b->synthetic.classes, "synthetic.classes differs");
    check(a->synthetic.seed == b->synthetic.seed, "synthetic.seed differs");
    check(a->synthetic.spread == b->synthetic.spread, "synthetic.spread differs");
    check(a->knn.k == b->knn.k, "knn.k differs");
    check(a->knn.metric == b->knn.metric, "knn.metric differs");
    check(a->knn.weights == b->knn.weights, "knn.weights differs");
    check(a->knn.engine == b->knn.engine, "knn.engine differs");
    check(a->device.type == b->device.type, "device.type differs");
    check(a->device.batch == b->device.batch, "device.batch differs");
    check(a->device.groups == b->device.groups, "device.groups differs");
    check(a->device.memory_mb == b->device.memory_mb, "device.memory_mb differs");
    check(a->device.list_len == b->device.list_len, "device.list_len differs");
    for (int i = 0; i < a->device.list_len && i < LBK_MAX_DEVICE_LIST; i++)
        check(a->device.list[i] == b->device.list[i], "device.list[%d] differs", i);
    check(a->tree.split == b->tree.split, "tree.split differs");
    check(a->tree.sort == b->tree.sort, "tree.sort differs");
    check(a->tree.verify == b->tree.verify, "tree.verify differs");
    check(a->mpi.merge == b->mpi.merge, "mpi.merge differs");
    check(a->mpi.partition == b->mpi.partition, "mpi.partition differs");
    check(strcmp(a->output.predictions, b->output.predictions) == 0, "predictions differs");
    check(strcmp(a->output.neighbors, b->output.neighbors) == 0, "neighbors differs");
    check(strcmp(a->output.distances, b->output.distances) == 0, "distances differs");
    check(strcmp(a->output.report, b->output.report) == 0, "report differs");
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
static int mode_roundtrip(const char *path)
{
    static lbk_job a, b;
    lbk_status st = lbk_job_load(path, &a);
    check(st == LBK_OK, "load %s: %s", path, lbk_status_name(st));
    if (st != LBK_OK)
        return 1;
    /* Exercise odd bytes in strings too. */
    check(lbk_job_set(&a, "output.report=we\\ird \"name\"\x01:#.txt") == LBK_OK, "set report");

    char p1[] = "/tmp/lbk_config_rt1_XXXXXX";
    char p2[] = "/tmp/lbk_config_rt2_XXXXXX";
    int fd1 = mkstemp(p1), fd2 = mkstemp(p2);
    check(fd1 >= 0 && fd2 >= 0, "mkstemp");
    FILE *f1 = fdopen(fd1, "w");
    lbk_job_print(&a, f1, 0);
    fclose(f1);
    st = lbk_job_load(p1, &b);
    check(st == LBK_OK, "printed job does not load: %s", lbk_status_name(st));
    if (st == LBK_OK) {
        same_job(&a, &b);
        FILE *f2 = fdopen(fd2, "w");
        fprintf(f2, "job:\n");
        lbk_job_print(&b, f2, 4);
        fclose(f2);
        char *t1 = slurp(p1), *t2 = slurp(p2);
        check(t1 && t2, "read back");
        if (t1 && t2) {
            /* t2 = "job:\n" + every line of t1 indented by 4. */
            char *expect = malloc(strlen(t1) * 2 + 16);
            strcpy(expect, "job:\n");
            for (char *line = t1; *line;) {
                char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
                strcat(expect, "    ");
                strncat(expect, line, len);
                line += len;
            }
            check(strcmp(expect, t2) == 0, "second print differs:\n%s\n---\n%s", expect, t2);
            free(expect);
        }
        free(t1);
        free(t2);
    }
    unlink(p1);
    unlink(p2);
    return failures ? 1 : 0;
}

static int mode_load(int argc, char **argv)
{
    static lbk_job j;
    lbk_status st = lbk_job_load(argv[2], &j);
    for (int i = 3; st == LBK_OK && i < argc; i++)
        st = lbk_job_set(&j, argv[i]);
    if (st == LBK_OK)
        st = lbk_job_validate(&j);
    if (st == LBK_OK)
        lbk_job_print(&j, stdout, 0);
    return lbk_status_exit_code(st);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "load") == 0)
        return mode_load(argc, argv);
    if (argc == 3 && strcmp(argv[1], "bad") == 0)
        return mode_bad(argv[2]);
    if (argc == 3 && strcmp(argv[1], "defaults") == 0)
        return mode_defaults(argv[2]);
    if (argc == 4 && strcmp(argv[1], "full") == 0)
        return mode_full(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "flow") == 0)
        return mode_flow(argv[2]);
    if (argc == 2 && strcmp(argv[1], "set-good") == 0)
        return mode_set_good();
    if (argc == 4 && strcmp(argv[1], "set-bad") == 0)
        return mode_set_bad(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "validate-bad") == 0)
        return mode_validate_bad(argv[2], argv[3], argv[4]);
    if (argc == 3 && strcmp(argv[1], "roundtrip") == 0)
        return mode_roundtrip(argv[2]);
    fprintf(stderr, "usage: see the comment at the top of config_probe.c\n");
    return 2;
}
