/* The embedding workload with the brute engine: reference and query .npy
 * files (float32 rows, int32 labels) read through src/io, rows normalised as
 * a cosine run normalises them (lbk_normalize_rows), K neighbours by cosine
 * (or ip), softmax votes (lbk_classify_scores). Reports the time of the
 * lbk_brute_query calls (all batches, end to end including transfers), the
 * kernel split, the prefilter's fallbacks, and top-1 / top-5 accuracy.
 *
 *   embedding_bench --dir D [--k 20] [--metric cosine|ip] [--queries N]
 *                   [--temperature 0.07] [--prefilter auto|on|off] [--budget-mb MB]
 *
 * D holds reference.npy, reference-labels.npy, query.npy, query-labels.npy
 * (bench/embedding_peers.py --generate writes them). */
#include "brute.h"
#include "classify.h"
#include "dataset_read.h"
#include "device.h"
#include "log.h"
#include "normalize.h"
#include "timer.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *dir;
    int k;
    lbk_metric metric;
    long queries;
    double temperature;
    lbk_brute_prefilter prefilter;
    uint64_t budget;
} options;

static bool parse(int argc, char **argv, options *o)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--dir") == 0)
            o->dir = v;
        else if (strcmp(a, "--k") == 0)
            o->k = atoi(v);
        else if (strcmp(a, "--metric") == 0)
            o->metric = strcmp(v, "ip") == 0 ? LBK_METRIC_IP : LBK_METRIC_COSINE;
        else if (strcmp(a, "--queries") == 0)
            o->queries = atol(v);
        else if (strcmp(a, "--temperature") == 0)
            o->temperature = atof(v);
        else if (strcmp(a, "--budget-mb") == 0)
            o->budget = (uint64_t)atol(v) << 20;
        else if (strcmp(a, "--prefilter") == 0)
            o->prefilter = strcmp(v, "off") == 0  ? LBK_PREFILTER_OFF
                           : strcmp(v, "on") == 0 ? LBK_PREFILTER_ON
                                                  : LBK_PREFILTER_AUTO;
        else
            return false;
    }
    return argc % 2 == 1 && o->dir;
}

/* DIR/NAME.npy with DIR/NAME-labels.npy, normalised for cosine. */
static lbk_status load(const options *o, const char *name, long max_rows, lbk_dataset *out)
{
    lbk_job_input_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.path, sizeof spec.path, "%s/%s.npy", o->dir, name);
    snprintf(spec.labels, sizeof spec.labels, "%s/%s-labels.npy", o->dir, name);
    spec.label_column = -1;
    spec.target_column = -1;
    spec.delimiter = ',';
    spec.header = -1;
    lbk_dataset_info info;
    lbk_status st = lbk_dataset_probe(&spec, &info);
    if (st != LBK_OK)
        return st;
    const uint64_t rows =
        max_rows > 0 && (uint64_t)max_rows < info.rows ? (uint64_t)max_rows : info.rows;
    if ((st = lbk_dataset_read(&spec, 0, rows, out)) != LBK_OK)
        return st;
    if (o->metric == LBK_METRIC_COSINE)
        lbk_normalize_rows(out->points, out->rows, out->dim);
    return LBK_OK;
}

/* Every batch of queries through the engine; the timings summed. */
static lbk_status run(lbk_brute *engine, const lbk_dataset *q, lbk_knn_result *res,
                      lbk_brute_timing *sum, double *seconds)
{
    const uint64_t batch = lbk_brute_max_batch(engine);
    const int k = res->k;
    memset(sum, 0, sizeof *sum);
    const double t0 = lbk_timer_now();
    for (uint64_t off = 0; off < q->rows; off += batch) {
        const uint64_t m = q->rows - off < batch ? q->rows - off : batch;
        lbk_knn_result slice = {
            .queries = m, .k = k, .keys = res->keys + off * k, .index = res->index + off * k};
        lbk_status st = lbk_brute_query(engine, q->points + off * q->dim, m, &slice);
        if (st != LBK_OK)
            return st;
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        lbk_brute_timing_add(sum, &t);
    }
    *seconds = lbk_timer_now() - t0;
    return LBK_OK;
}

/* Top-1 and top-5 hits of the softmax vote. */
static void score(const options *o, const lbk_dataset *ref, const lbk_dataset *q,
                  const lbk_knn_result *res, uint64_t *top1, uint64_t *top5)
{
    const int k = o->k;
    const lbk_classify_rule rule = {o->metric, LBK_WEIGHTS_SOFTMAX, o->temperature};
    lbk_knn_candidate *list = malloc((size_t)k * sizeof *list);
    lbk_classify_score *scores = malloc((size_t)k * sizeof *scores);
    *top1 = *top5 = 0;
    for (uint64_t i = 0; list && scores && i < q->rows; i++) {
        for (int s = 0; s < k; s++) {
            const uint32_t x = res->index[i * k + s];
            list[s] = x < ref->rows ? (lbk_knn_candidate){res->keys[i * k + s], ref->labels[x], x}
                                    : (lbk_knn_candidate){res->keys[i * k + s], -1, UINT64_MAX};
        }
        const int n = lbk_classify_scores(list, k, &rule, scores);
        *top1 += lbk_classify_top(scores, n) == q->labels[i];
        *top5 += lbk_classify_in_top(scores, n, q->labels[i], 5);
    }
    free(list);
    free(scores);
}

int main(int argc, char **argv)
{
    options o = {.k = 20, .metric = LBK_METRIC_COSINE, .temperature = 0.07};
    if (!parse(argc, argv, &o)) {
        fprintf(stderr, "usage: embedding_bench --dir D [--k K] [--metric cosine|ip] "
                        "[--queries N] [--temperature T] [--prefilter auto|on|off] "
                        "[--budget-mb MB]\n");
        return 2;
    }
    lbk_status st = LBK_OK;
    lbk_dataset ref = {0}, q = {0};
    lbk_device *dev = NULL;
    lbk_brute *engine = NULL;
    lbk_knn_result res = {0};
    const double t_read = lbk_timer_now();
    if ((st = load(&o, "reference", 0, &ref)) != LBK_OK ||
        (st = load(&o, "query", o.queries, &q)) != LBK_OK)
        goto cleanup;
    const double read_s = lbk_timer_now() - t_read;
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    if ((st = lbk_device_open(&req, &dev)) != LBK_OK)
        goto cleanup;
    const lbk_brute_params params = {
        .k = o.k, .metric = o.metric, .memory_budget = o.budget, .prefilter = o.prefilter};
    const double t_create = lbk_timer_now();
    if ((st = lbk_brute_create(dev, &ref, &params, &engine)) != LBK_OK)
        goto cleanup;
    const double create_s = lbk_timer_now() - t_create;
    res = (lbk_knn_result){.queries = q.rows, .k = o.k};
    res.keys = malloc(q.rows * (size_t)o.k * sizeof *res.keys);
    res.index = malloc(q.rows * (size_t)o.k * sizeof *res.index);
    if (!res.keys || !res.index) {
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    /* Warm-up: PoCL compiles each kernel for its launch shape on first use. */
    lbk_knn_result warm = {
        .queries = q.rows < 64 ? q.rows : 64, .k = o.k, .keys = res.keys, .index = res.index};
    if ((st = lbk_brute_query(engine, q.points, warm.queries, &warm)) != LBK_OK)
        goto cleanup;
    lbk_brute_timing t;
    double query_s = 0;
    if ((st = run(engine, &q, &res, &t, &query_s)) != LBK_OK)
        goto cleanup;
    uint64_t top1 = 0, top5 = 0;
    score(&o, &ref, &q, &res, &top1, &top5);
    printf("device: %s\n", lbk_device_description(dev));
    printf("references %llu x %d, queries %llu, K = %d, metric %s, batch %llu, chunk %llu\n",
           (unsigned long long)ref.rows, ref.dim, (unsigned long long)q.rows, o.k,
           lbk_metric_name(o.metric), (unsigned long long)lbk_brute_max_batch(engine),
           (unsigned long long)lbk_brute_chunk_rows(engine));
    printf("read + normalise: %.3f s, create (upload + kernel build): %.3f s\n", read_s,
           create_s);
    printf("query time: %.3f s (kernels: distance %.3f s, select %.3f s, final %.3f s)\n",
           query_s, t.distance_s, t.select_s, t.final_s);
    printf("prefilter: %llu queries, %llu sent to the exact path\n",
           (unsigned long long)t.prefiltered_queries, (unsigned long long)t.fallback_queries);
    printf("distance kernels: %.1f G elements/s\n",
           (double)ref.rows * (double)q.rows * ref.dim / t.distance_s * 1e-9);
    printf("accuracy (softmax, T = %g): top-1 %.4f, top-5 %.4f\n", o.temperature,
           (double)top1 / (double)q.rows, (double)top5 / (double)q.rows);
cleanup:
    lbk_brute_destroy(engine);
    lbk_device_close(dev);
    free(res.keys);
    free(res.index);
    lbk_dataset_free(&ref);
    lbk_dataset_free(&q);
    return lbk_status_exit_code(st);
}
