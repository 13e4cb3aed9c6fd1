/* Fashion-MNIST with the brute engine: 60000 x 784 references, 10000
 * queries, K = 5, L2, pixel values 0..255 as floats. Reports the time of the
 * lbk_brute_query calls (all batches, end to end including transfers), the
 * kernel split, and the uniform-vote accuracy (ties to the smallest label,
 * as scikit-learn's KNeighborsClassifier).
 *
 *   fashion_bench [--dir /usr/share/datasets/fashion-mnist] [--k 5]
 *                 [--queries 10000] [--select bubble|sort] [--groups G]
 *                 [--budget-mb MB] [--prefilter auto|on|off] [--metric l2|l1]
 *                 [--lanes 4|8|16] [--block QxV] [--tile T] [--slice S]
 *                 [--type float32|uint8] (uint8: the pixels kept as bytes, exact
 *                 integer keys; docs/design.md "Compact reference points")
 * The last four override the device's derived kernel parameters. */
#include "brute.h"
#include "cuknn_baseline.h"
#include "device.h"
#include "log.h"
#include "timer.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* IDX (gzipped) of unsigned bytes: images (rank 3) become rows of floats,
 * labels (rank 1) int32. */
static lbk_status read_idx(const char *path, uint32_t *rows, uint32_t *cols, float **points,
                           int32_t **labels)
{
    lbk_status st = LBK_OK;
    unsigned char *bytes = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        lbk_error("%s: cannot open", path);
        return LBK_ERR_IO;
    }
    unsigned char head[16];
    if (gzread(f, head, 4) != 4 || head[2] != 0x08 || (head[3] != 1 && head[3] != 3)) {
        lbk_error("%s: not an unsigned-byte IDX file of rank 1 or 3", path);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    const int rank = head[3];
    if (gzread(f, head + 4, (unsigned)(4 * rank)) != 4 * rank) {
        lbk_error("%s: truncated header", path);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    *rows = be32(head + 4);
    *cols = rank == 3 ? be32(head + 8) * be32(head + 12) : 1;
    const size_t total = (size_t)*rows * *cols;
    bytes = malloc(total ? total : 1);
    if (!bytes) {
        lbk_error("%s: out of memory", path);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    if ((size_t)gzread(f, bytes, (unsigned)total) != total) {
        lbk_error("%s: truncated data", path);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (points) {
        *points = malloc(total * sizeof **points);
        if (!*points) {
            st = LBK_ERR_NOMEM;
            lbk_error("%s: out of memory", path);
            goto cleanup;
        }
        for (size_t i = 0; i < total; i++)
            (*points)[i] = (float)bytes[i];
    }
    if (labels) {
        *labels = malloc(total * sizeof **labels);
        if (!*labels) {
            st = LBK_ERR_NOMEM;
            lbk_error("%s: out of memory", path);
            goto cleanup;
        }
        for (size_t i = 0; i < total; i++)
            (*labels)[i] = bytes[i];
    }
cleanup:
    free(bytes);
    gzclose(f);
    return st;
}

int main(int argc, char **argv)
{
    const char *dir = "/usr/share/datasets/fashion-mnist";
    int k = 5, groups = 0;
    long max_queries = 10000;
    uint64_t budget = 0;
    bool full_sort = false; /* --select sort: the CUKNN-style baseline (cuknn_baseline.h) */
    lbk_brute_prefilter prefilter = LBK_PREFILTER_AUTO;
    bool bytes_type = false;
    lbk_metric metric = LBK_METRIC_L2;
    int lanes = 0, block_q = 0, block_v = 0, tile = 0, slice = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
        else if (strcmp(argv[i], "--k") == 0)
            k = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--queries") == 0)
            max_queries = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--groups") == 0)
            groups = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--budget-mb") == 0)
            budget = (uint64_t)atol(argv[i + 1]) << 20;
        else if (strcmp(argv[i], "--prefilter") == 0)
            prefilter = strcmp(argv[i + 1], "off") == 0  ? LBK_PREFILTER_OFF
                        : strcmp(argv[i + 1], "on") == 0 ? LBK_PREFILTER_ON
                                                         : LBK_PREFILTER_AUTO;
        else if (strcmp(argv[i], "--metric") == 0)
            metric = strcmp(argv[i + 1], "l1") == 0 ? LBK_METRIC_L1 : LBK_METRIC_L2;
        else if (strcmp(argv[i], "--lanes") == 0)
            lanes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--block") == 0)
            sscanf(argv[i + 1], "%dx%d", &block_q, &block_v);
        else if (strcmp(argv[i], "--tile") == 0)
            tile = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--slice") == 0)
            slice = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--type") == 0)
            bytes_type = strcmp(argv[i + 1], "uint8") == 0;
        else if (strcmp(argv[i], "--select") == 0)
            full_sort = strcmp(argv[i + 1], "sort") == 0;
        else {
            fprintf(stderr, "fashion_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }

    lbk_status st = LBK_OK;
    float *train = NULL, *test = NULL;
    int32_t *train_labels = NULL, *test_labels = NULL;
    lbk_device *dev = NULL;
    lbk_brute *engine = NULL;
    lbk_knn_result res = {0};
    uint32_t n, dim, nq, qdim, nl, nql, one;
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    if ((st = read_idx(path, &n, &dim, &train, NULL)) != LBK_OK)
        goto cleanup;
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
    if ((st = read_idx(path, &nl, &one, NULL, &train_labels)) != LBK_OK)
        goto cleanup;
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir);
    if ((st = read_idx(path, &nq, &qdim, &test, NULL)) != LBK_OK)
        goto cleanup;
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
    if ((st = read_idx(path, &nql, &one, NULL, &test_labels)) != LBK_OK)
        goto cleanup;
    if (nl != n || nql != nq || qdim != dim) {
        lbk_error("%s: inconsistent Fashion-MNIST files", dir);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (max_queries > 0 && (uint32_t)max_queries < nq)
        nq = (uint32_t)max_queries;

    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    if ((st = lbk_device_open(&req, &dev)) != LBK_OK)
        goto cleanup;
    uint8_t *train_bytes = NULL;
    if (bytes_type) {
        train_bytes = malloc((size_t)n * dim);
        if (!train_bytes) {
            fprintf(stderr, "fashion_bench: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < (size_t)n * dim; i++)
            train_bytes[i] = (uint8_t)train[i];
    }
    const lbk_dataset data = bytes_type
                                 ? (lbk_dataset){.rows = n,
                                                 .dim = (int)dim,
                                                 .dtype = LBK_DTYPE_UINT8,
                                                 .raw = train_bytes}
                                 : (lbk_dataset){.rows = n, .dim = (int)dim, .points = train};
    lbk_tuning tuning;
    lbk_tuning_derive(dev, &tuning);
    tuning.lanes = lanes ? lanes : tuning.lanes;
    tuning.block_queries = block_q ? block_q : tuning.block_queries;
    tuning.block_vectors = block_v ? block_v : tuning.block_vectors;
    tuning.tile_blocks = tile ? tile : tuning.tile_blocks;
    tuning.slice = slice ? slice : tuning.slice;
    char tuned[128];
    lbk_tuning_format(&tuning, tuned, sizeof tuned);
    const lbk_brute_params params = {.k = k,
                                     .metric = metric,
                                     .groups = groups,
                                     .memory_budget = budget,
                                     .prefilter = prefilter,
                                     .tuning = &tuning};
    const double t_create = lbk_timer_now();
    if ((st = full_sort ? lbk_cuknn_create(dev, &data, &params, &engine)
                        : lbk_brute_create(dev, &data, &params, &engine)) != LBK_OK)
        goto cleanup;
    const double create_s = lbk_timer_now() - t_create;
    const uint64_t batch = lbk_brute_max_batch(engine);
    res.queries = nq;
    res.k = k;
    res.keys = malloc((size_t)nq * k * sizeof *res.keys);
    res.index = malloc((size_t)nq * k * sizeof *res.index);
    if (!res.keys || !res.index) {
        st = LBK_ERR_NOMEM;
        lbk_error("out of host memory for results");
        goto cleanup;
    }
    /* Warm-up: PoCL compiles each kernel for its launch shape on first use. */
    {
        const uint64_t m = nq < 64 ? nq : 64;
        lbk_knn_result warm = {.queries = m, .k = k, .keys = res.keys, .index = res.index};
        if ((st = lbk_brute_query(engine, test, m, &warm)) != LBK_OK)
            goto cleanup;
    }
    lbk_brute_timing sum = {0};
    const double t0 = lbk_timer_now();
    for (uint64_t off = 0; off < nq; off += batch) {
        const uint64_t m = nq - off < batch ? nq - off : batch;
        lbk_knn_result slice = {
            .queries = m, .k = k, .keys = res.keys + off * k, .index = res.index + off * k};
        if ((st = lbk_brute_query(engine, test + off * dim, m, &slice)) != LBK_OK)
            goto cleanup;
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        lbk_brute_timing_add(&sum, &t);
    }
    const double query_s = lbk_timer_now() - t0;

    uint32_t correct = 0;
    for (uint32_t q = 0; q < nq; q++) {
        int votes[256] = {0};
        for (int s = 0; s < k; s++) {
            const uint32_t i = res.index[(size_t)q * k + s];
            if (i < n)
                votes[train_labels[i] & 255]++;
        }
        int best = 0;
        for (int c = 1; c < 256; c++)
            if (votes[c] > votes[best])
                best = c;
        correct += best == test_labels[q];
    }
    printf("device: %s\n", lbk_device_description(dev));
    printf("kernel parameters: %s\n", tuned);
    printf("references %u x %u, queries %u, K = %d, select %s, batch %llu, chunk %llu\n", n, dim,
           nq, k, full_sort ? "full-sort" : "bubble", (unsigned long long)batch,
           (unsigned long long)lbk_brute_chunk_rows(engine));
    printf("create (upload + kernel build): %.3f s\n", create_s);
    printf("query time: %.3f s (kernels: distance %.3f s, select %.3f s, final %.3f s)\n",
           query_s, sum.distance_s, sum.select_s, sum.final_s);
    printf("prefilter: %llu queries, %llu sent to the exact path\n",
           (unsigned long long)sum.prefiltered_queries, (unsigned long long)sum.fallback_queries);
    printf("distance kernels: %.1f G elements/s (one element = one coordinate of one pair)\n",
           n * (double)nq * dim / sum.distance_s * 1e-9);
    printf("accuracy: %.4f (%u / %u)\n", (double)correct / nq, correct, nq);
cleanup:
    lbk_brute_destroy(engine);
    lbk_device_close(dev);
    free(res.keys);
    free(res.index);
    free(train);
    free(train_bytes);
    free(test);
    free(train_labels);
    free(test_labels);
    return lbk_status_exit_code(st);
}
