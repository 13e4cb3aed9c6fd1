#include "run.h"

#include "classify.h"
#include "dataset.h"
#include "device.h"
#include "engine.h"
#include "log.h"
#include "output.h"
#include "progress.h"
#include "report.h"
#include "timer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Largest class count for which the report carries a confusion matrix. */
#define CONFUSION_MAX_CLASSES 256
/* Upper bound on queries per batch, whatever the engine could take, so the
 * host-side K-lists of one batch stay in the hundreds of MiB at most. */
#define BATCH_CAP (1u << 18)

/* What rank 0 learned about the inputs; broadcast as bytes. */
typedef struct {
    uint64_t reference_rows, query_rows;
    int dim;
    bool reference_labels, query_labels;
} input_shape;

static lbk_status probe_inputs(const lbk_job *job, input_shape *shape)
{
    lbk_status st = LBK_OK;
    memset(shape, 0, sizeof *shape);
    if (job->reference.path[0] == '\0') {
        shape->reference_rows = job->synthetic.points;
        shape->query_rows = job->synthetic.queries;
        shape->dim = job->synthetic.dim;
        shape->reference_labels = shape->query_labels = true;
        return LBK_OK;
    }
    lbk_source_info ref, query;
    if ((st = lbk_source_probe(&job->reference, &ref)) != LBK_OK)
        return st;
    if ((st = lbk_source_probe(&job->query, &query)) != LBK_OK)
        return st;
    if (query.dim != ref.dim) {
        lbk_error("%s: queries have dimension %d but the reference points (%s) have %d",
                  job->query.path, query.dim, job->reference.path, ref.dim);
        return LBK_ERR_INPUT;
    }
    shape->reference_rows = ref.rows;
    shape->query_rows = query.rows;
    shape->dim = ref.dim;
    shape->reference_labels = ref.has_labels;
    shape->query_labels = query.has_labels;
    return LBK_OK;
}

/* An output that is a directory, or that is one of the input files, would
 * otherwise show only at the final rename: after all the work, with other
 * outputs already in place, or with an input replaced by results. */
static lbk_status check_output_paths(const lbk_job *job)
{
    const char *const names[] = {"predictions", "neighbors", "distances", "report"};
    const char *const outputs[] = {job->output.predictions, job->output.neighbors,
                                   job->output.distances, job->output.report};
    const char *const inputs[] = {job->reference.path, job->reference.labels, job->query.path,
                                  job->query.labels};
    for (int i = 0; i < 4; i++) {
        struct stat out;
        if (!outputs[i][0] || stat(outputs[i], &out) != 0)
            continue;  /* not there yet: creating it is checked when it is opened */
        if (S_ISDIR(out.st_mode)) {
            lbk_error("%s: output.%s is a directory", outputs[i], names[i]);
            return LBK_ERR_CONFIG;
        }
        for (int j = 0; j < 4; j++) {
            struct stat in;
            if (inputs[j][0] && stat(inputs[j], &in) == 0 && in.st_dev == out.st_dev &&
                in.st_ino == out.st_ino) {
                lbk_error("%s: output.%s would overwrite the input file %s", outputs[i],
                          names[i], inputs[j]);
                return LBK_ERR_CONFIG;
            }
        }
    }
    return LBK_OK;
}

static lbk_status check_shape(const lbk_job *job, const input_shape *shape)
{
    const char *where = job->reference.path[0] ? job->reference.path : "synthetic.points";
    if (shape->reference_rows == 0) {
        lbk_error("%s: the reference set is empty", where);
        return LBK_ERR_INPUT;
    }
    if ((uint64_t)job->knn.k > shape->reference_rows) {
        lbk_error("%s: knn.k = %d is larger than the %" PRIu64 " reference points", where,
                  job->knn.k, shape->reference_rows);
        return LBK_ERR_INPUT;
    }
    if (job->output.neighbors[0] && shape->reference_rows > (uint64_t)INT32_MAX) {
        lbk_error("%s: %" PRIu64 " reference points do not fit the int32 ids of an .ivecs "
                  "neighbours file", where, shape->reference_rows);
        return LBK_ERR_INPUT;
    }
    if (job->output.predictions[0] && !shape->reference_labels) {
        lbk_error("%s: output.predictions needs reference labels, and none were given", where);
        return LBK_ERR_INPUT;
    }
    return check_output_paths(job);
}

static lbk_status read_rows(const lbk_job *job, bool is_query, uint64_t lo, uint64_t hi,
                            lbk_dataset *out)
{
    if (job->reference.path[0] == '\0')
        return lbk_synthetic_rows(&job->synthetic, is_query, lo, hi, out);
    return lbk_source_read(is_query ? &job->query : &job->reference, lo, hi, out);
}

static int32_t max_label(const lbk_dataset *d)
{
    int32_t m = -1;
    if (d->labels)
        for (uint64_t i = 0; i < d->rows; i++)
            if (d->labels[i] > m)
                m = d->labels[i];
    return m;
}

/* Engine output (shard rows) to merge candidates (global ids, labels). */
static void to_candidates(const lbk_knn_result *res, const lbk_dataset *shard,
                          lbk_candidate *out)
{
    const uint64_t slots = res->queries * (uint64_t)res->k;
    for (uint64_t s = 0; s < slots; s++) {
        const uint32_t idx = res->index[s];
        if (idx == UINT32_MAX) {
            out[s].key = INFINITY;
            out[s].label = -1;
            out[s].id = UINT64_MAX;
        } else {
            out[s].key = res->keys[s];
            out[s].label = shard->labels ? shard->labels[idx] : -1;
            out[s].id = shard->first_row + idx;
        }
    }
}

typedef struct {
    lbk_dataset shard, queries;
    lbk_device *device;
    lbk_engine_state *engine;
    lbk_knn_result result;
    lbk_candidate *local, *merged;
    int32_t *predictions, *batch_truth;
    float *batch_points;
    char *devices;
    double *rank_phases;
    lbk_outputs outputs;
    bool outputs_open;   /* partial files exist (opened by this rank) */
    bool committed;      /* renamed into place: nothing to clean up */
    lbk_confusion confusion;
} run_state;

static void run_state_free(run_state *s, bool remove_outputs)
{
    if (s->outputs_open && !s->committed)
        lbk_outputs_abort(&s->outputs, remove_outputs);
    lbk_confusion_free(&s->confusion);
    lbk_engine_destroy(s->engine);
    lbk_device_close(s->device);
    lbk_knn_result_free(&s->result);
    lbk_dataset_free(&s->shard);
    lbk_dataset_free(&s->queries);
    free(s->local);
    free(s->merged);
    free(s->predictions);
    free(s->batch_truth);
    free(s->batch_points);
    free(s->devices);
    free(s->rank_phases);
}

static void *alloc_or_log(size_t count, size_t size, const char *what, lbk_status *st)
{
    void *p = malloc((count ? count : 1) * size);
    if (!p) {
        lbk_error("out of host memory for %s (%zu bytes)", what, count * size);
        *st = LBK_ERR_NOMEM;
    }
    return p;
}

/* Classify, score and write the merged lists of queries [first, first+count).
 * When every rank writes a slice (`sliced`: reduce_scatter or replicate) every
 * rank calls this (it holds a collective scan), and a local failure still
 * reaches the scan so no rank is left waiting. */
static lbk_status emit_slice(const lbk_comm *comm, run_state *s, const lbk_job *job,
                             const input_shape *shape, bool sliced, uint64_t first,
                             uint64_t count, const int32_t *truth)
{
    lbk_status st = LBK_OK;
    char *text = NULL;
    size_t len = 0;
    if (shape->reference_labels) {
        for (uint64_t q = 0; q < count; q++) {
            s->predictions[q] =
                lbk_vote(s->merged + q * (uint64_t)job->knn.k, job->knn.k, job->knn.metric,
                         job->knn.weights);
            if (truth)
                lbk_confusion_add(&s->confusion, truth[q], s->predictions[q]);
        }
    }
    if (s->outputs_open)
        st = lbk_outputs_write_lists(&s->outputs, first, count, s->merged);
    if (st == LBK_OK && s->outputs_open && lbk_outputs_want_predictions(&s->outputs))
        st = lbk_format_predictions(first, count, s->predictions, &text, &len);
    /* Predictions are variable-length text: every rank's slice goes after the
     * slices of the ranks before it, so offsets come from an exclusive scan. */
    uint64_t before = 0, total = len;
    if (sliced) {
        const lbk_status scan = lbk_exscan_u64(comm, len, &before, &total);
        st = st != LBK_OK ? st : scan;
    }
    if (st == LBK_OK && len > 0)
        st = lbk_outputs_write_text(&s->outputs, s->outputs.text_offset + before, text, len);
    s->outputs.text_offset += total;
    free(text);
    return st;
}

lbk_status lbk_run(const lbk_comm *comm, lbk_status load_status, lbk_job *job,
                   const lbk_run_options *options)
{
    lbk_status st = load_status;
    run_state s;
    input_shape shape;
    double phase[LBK_PHASE_COUNT] = {0};
    const double t_start = lbk_now();
    const bool root = comm->rank == 0;
    memset(&s, 0, sizeof s);
    memset(&shape, 0, sizeof shape);

    /* 1. The job and the shape of the inputs, decided on rank 0. */
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    if ((st = lbk_bcast_job(comm, job)) != LBK_OK)
        goto cleanup;
    const bool replicate = job->mpi.partition == LBK_PARTITION_REPLICATE;
    /* Every rank classifies and writes its own slice of each batch. */
    const bool is_scatter = replicate || job->mpi.merge == LBK_MERGE_REDUCE_SCATTER;
    double t = lbk_now();
    if (root && (st = probe_inputs(job, &shape)) == LBK_OK)
        st = check_shape(job, &shape);
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    if ((st = lbk_bcast_bytes(comm, &shape, sizeof shape)) != LBK_OK)
        goto cleanup;

    /* 2. Each rank reads its own shard; rank 0 also reads the queries. */
    const uint64_t n = shape.reference_rows;
    const uint64_t lo = replicate ? 0 : n * (uint64_t)comm->rank / (uint64_t)comm->size;
    const uint64_t hi = replicate ? n : n * (uint64_t)(comm->rank + 1) / (uint64_t)comm->size;
    st = read_rows(job, false, lo, hi, &s.shard);
    if (st == LBK_OK && root)
        st = read_rows(job, true, 0, shape.query_rows, &s.queries);
    phase[LBK_PHASE_READ] = lbk_now() - t;
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    int32_t label_max = max_label(&s.shard);
    if (root) {
        const int32_t qmax = max_label(&s.queries);
        label_max = qmax > label_max ? qmax : label_max;
    }
    if ((st = lbk_allreduce_i32(comm, &label_max, LBK_REDUCE_MAX)) != LBK_OK)
        goto cleanup;

    /* 3. A device per rank, and the per-shard engine. */
    t = lbk_now();
    const lbk_device_request request = {job->device.type, comm->local_rank, job->device.list,
                                        job->device.list_len};
    st = lbk_device_open(&request, &s.device);
    phase[LBK_PHASE_DEVICE] = lbk_now() - t;
    s.devices = alloc_or_log((size_t)comm->size, LBK_DEVICE_DESC, "device names", &st);
    if (st == LBK_OK && root)
        s.rank_phases = alloc_or_log((size_t)comm->size * LBK_PHASE_COUNT, sizeof(double),
                                     "per-rank timings", &st);
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    char mine[LBK_DEVICE_DESC];
    snprintf(mine, sizeof mine, "%s [index %d, node rank %d]", lbk_device_description(s.device),
             lbk_device_index(s.device), comm->local_rank);
    if ((st = lbk_allgather_bytes(comm, mine, s.devices, LBK_DEVICE_DESC)) != LBK_OK)
        goto cleanup;

    const char *why = "";
    const lbk_engine engine = lbk_engine_resolve(job->knn.engine, shape.dim, n, job->knn.k, &why);
    t = lbk_now();
    st = lbk_engine_create(s.device, job, engine, &s.shard, &s.engine);
    phase[LBK_PHASE_BUILD] = lbk_now() - t;
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;

    /* 4. Batches: the smallest batch any rank's device can take. */
    uint64_t batch = lbk_engine_max_batch(s.engine);
    if (job->device.batch > 0 && job->device.batch < batch)
        batch = job->device.batch;
    if (batch > BATCH_CAP)
        batch = BATCH_CAP;
    if (batch > shape.query_rows)
        batch = shape.query_rows;
    if (batch == 0)
        batch = 1;
    if ((st = lbk_allreduce_u64(comm, &batch, LBK_REDUCE_MIN)) != LBK_OK)
        goto cleanup;
    const uint64_t nq = shape.query_rows;
    const uint64_t batches = (nq + batch - 1) / batch;
    const int k = job->knn.k;
    st = lbk_knn_result_alloc(&s.result, batch, k);
    if (st == LBK_OK)
        s.local = alloc_or_log(batch * (uint64_t)k, sizeof *s.local, "local K-lists", &st);
    if (st == LBK_OK)
        s.merged = alloc_or_log(batch * (uint64_t)k, sizeof *s.merged, "merged K-lists", &st);
    if (st == LBK_OK)
        s.predictions = alloc_or_log(batch, sizeof *s.predictions, "predictions", &st);
    if (st == LBK_OK && !root)
        s.batch_points = alloc_or_log(batch * (uint64_t)shape.dim, sizeof(float), "query batch", &st);
    if (st == LBK_OK && shape.query_labels && is_scatter && !root)
        s.batch_truth = alloc_or_log(batch, sizeof *s.batch_truth, "query labels", &st);
    if (st == LBK_OK && shape.query_labels)
        st = lbk_confusion_init(&s.confusion,
                                label_max < CONFUSION_MAX_CLASSES ? label_max + 1 : 0);

    /* 5. Output files: rank 0 creates them; with reduce_scatter every rank
     * then opens them to write its own slices. */
    const bool writer = root || is_scatter;
    if (st == LBK_OK && root) {
        st = lbk_outputs_open(&s.outputs, job, true);
        s.outputs_open = st == LBK_OK;
    }
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    if (writer && !root) {
        st = lbk_outputs_open(&s.outputs, job, false);
        s.outputs_open = st == LBK_OK;
    }

    lbk_progress progress;
    lbk_progress_start(&progress, root && options->progress, nq);
    const double t_search = lbk_now();
    uint64_t merge_bytes = 0;
    for (uint64_t b = 0; b < batches; b++) {
        if ((st = lbk_agree(comm, st)) != LBK_OK)
            goto cleanup;
        const uint64_t first = b * batch;
        const uint64_t count = nq - first < batch ? nq - first : batch;

        t = lbk_now();
        float *points = root ? s.queries.points + first * (uint64_t)shape.dim : s.batch_points;
        if ((st = lbk_bcast_floats(comm, points, count * (uint64_t)shape.dim)) != LBK_OK)
            goto cleanup;
        int32_t *truth = NULL;
        if (shape.query_labels) {
            truth = root ? s.queries.labels + first : s.batch_truth;
            if (is_scatter &&
                (st = lbk_bcast_bytes(comm, truth, count * sizeof *truth)) != LBK_OK)
                goto cleanup;
        }
        phase[LBK_PHASE_DISTRIBUTE] += lbk_now() - t;

        /* Replicated references: each rank's own slice of the batch is
         * already final, so its lists go straight to s.merged. */
        uint64_t slice_first = 0, slice_count = count, moved = 0;
        if (replicate)
            lbk_query_slice(count, comm->size, comm->rank, &slice_first, &slice_count);
        t = lbk_now();
        s.result.queries = slice_count;
        st = lbk_engine_query(s.engine, points + slice_first * (uint64_t)shape.dim, slice_count,
                              &s.result);
        if (st == LBK_OK)
            to_candidates(&s.result, &s.shard, replicate ? s.merged : s.local);
        phase[LBK_PHASE_QUERY] += lbk_now() - t;
        if ((st = lbk_agree(comm, st)) != LBK_OK)
            goto cleanup;

        if (!replicate) {
            t = lbk_now();
            st = lbk_merge_candidates(comm, job->mpi.merge, s.local, count, k, s.merged,
                                      &slice_first, &slice_count, &moved);
            merge_bytes += moved;
            phase[LBK_PHASE_MERGE] += lbk_now() - t;
            if ((st = lbk_agree(comm, st)) != LBK_OK)
                goto cleanup;
        }

        t = lbk_now();
        if (is_scatter || root)
            st = emit_slice(comm, &s, job, &shape, is_scatter, first + slice_first, slice_count,
                            truth ? truth + slice_first : NULL);
        phase[LBK_PHASE_OUTPUT] += lbk_now() - t;
        lbk_progress_update(&progress, first + count, b + 1, batches);
    }
    lbk_progress_finish(&progress);
    const double search_s = lbk_now() - t_search;

    /* A failed write in the last batch is still in st: closing must not
     * overwrite it, or the run would commit a short file and exit 0. */
    if (st == LBK_OK && s.outputs_open)
        st = lbk_outputs_close(&s.outputs);
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;

    /* 6. Accuracy over every rank's slices, timings over ranks, the report. */
    if (shape.query_labels && is_scatter && comm->size > 1) {
        uint64_t counts[3] = {s.confusion.total, s.confusion.correct, s.confusion.other};
        if ((st = lbk_reduce_sum_u64(comm, counts, 3)) != LBK_OK ||
            (st = lbk_reduce_sum_u64(comm, s.confusion.matrix,
                                     (uint64_t)s.confusion.classes * (uint64_t)s.confusion.classes)) != LBK_OK)
            goto cleanup;
        s.confusion.total = counts[0];
        s.confusion.correct = counts[1];
        s.confusion.other = counts[2];
    }
    lbk_run_report report;
    memset(&report, 0, sizeof report);
    if ((st = lbk_reduce_stats(comm, phase, LBK_PHASE_COUNT, report.phase_min, report.phase_avg,
                               report.phase_max)) != LBK_OK)
        goto cleanup;
    if ((st = lbk_reduce_sum_u64(comm, &merge_bytes, 1)) != LBK_OK)
        goto cleanup;
    if ((st = lbk_gather_doubles(comm, phase, LBK_PHASE_COUNT, s.rank_phases)) != LBK_OK)
        goto cleanup;
    if (root) {
        report.rank_phases = s.rank_phases;
        report.job = job;
        report.reference_rows = n;
        report.query_rows = nq;
        report.dim = shape.dim;
        report.reference_labels = shape.reference_labels;
        report.query_labels = shape.query_labels;
        report.ranks = comm->size;
        report.devices = s.devices;
        report.engine = engine;
        report.engine_why = why;
        lbk_engine_describe(s.engine, report.engine_detail, sizeof report.engine_detail);
        report.batches = batches;
        report.batch_size = batch;
        report.search_s = search_s;
        report.merge_bytes = merge_bytes;
        report.confusion = shape.query_labels && shape.reference_labels ? &s.confusion : NULL;
        report.total_s = lbk_now() - t_start;
        if (job->output.report[0]) {
            char *text = NULL;
            size_t len = 0;
            if ((st = lbk_render_report(&report, &text, &len)) == LBK_OK)
                st = lbk_outputs_write_report(&s.outputs, job->output.report, text, len);
            free(text);
        }
        if (st == LBK_OK && !lbk_log_is_quiet())
            lbk_print_summary(stdout, &report);
    }
    if ((st = lbk_agree(comm, st)) != LBK_OK)
        goto cleanup;
    /* Only now, with every rank done and agreed, do results appear. */
    if (root)
        st = lbk_outputs_commit(&s.outputs);
    s.committed = st == LBK_OK;
    st = lbk_agree(comm, st);
cleanup:
    run_state_free(&s, root);
    return st;
}

lbk_status lbk_check(const lbk_job *job)
{
    lbk_status st;
    input_shape shape;
    lbk_dataset ref = {0}, query = {0};
    if ((st = probe_inputs(job, &shape)) != LBK_OK)
        goto cleanup;
    if ((st = check_shape(job, &shape)) != LBK_OK)
        goto cleanup;
    /* Reading everything is what validates every value (NaN, ragged rows). */
    if ((st = read_rows(job, false, 0, shape.reference_rows, &ref)) != LBK_OK)
        goto cleanup;
    if ((st = read_rows(job, true, 0, shape.query_rows, &query)) != LBK_OK)
        goto cleanup;
    printf("%s: OK\n", job->source);
    printf("  reference  %" PRIu64 " x %d%s  (%s)\n", shape.reference_rows, shape.dim,
           shape.reference_labels ? ", labelled" : ", no labels",
           job->reference.path[0] ? job->reference.path : "built-in synthetic blobs");
    printf("  queries    %" PRIu64 " x %d%s  (%s)\n", shape.query_rows, shape.dim,
           query.labels ? ", labelled" : ", no labels",
           job->reference.path[0] ? job->query.path : "built-in synthetic blobs");
    const char *why = "";
    const lbk_engine engine =
        lbk_engine_resolve(job->knn.engine, shape.dim, shape.reference_rows, job->knn.k, &why);
    printf("  knn        k=%d metric=%s weights=%s engine=%s (%s)\n", job->knn.k,
           lbk_metric_name(job->knn.metric), lbk_weights_name(job->knn.weights),
           lbk_engine_name(engine), why);
cleanup:
    lbk_dataset_free(&ref);
    lbk_dataset_free(&query);
    return st;
}
