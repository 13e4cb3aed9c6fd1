/* The brute engine's interface (brute.h): set-up, the path table each batch
 * walks, timings. The rooms (docs/design.md, section 8): brute_core.c is
 * what every path shares; brute_cascade.c, brute_prefilter.c and
 * brute_exact.c are the paths, each with its own part of the engine. */
#include "brute.h"

#include "brute_cascade_impl.h"
#include "brute_core_impl.h"
#include "brute_exact_impl.h"
#include "brute_icascade_impl.h"
#include "brute_prefilter_impl.h"
#include "brute_scale.h"
#include "device_cl.h"
#include "lbk_shared.h"
#include "log.h"
#include "try.h"
#include "tuning.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The paths a batch walks, first to last. A batch enters at the first that
 * applies; each hands the queries it cannot settle down to the next that
 * applies, never back up; the exact path, last, applies always and settles
 * every query. */
static const lbk_brute_path *const paths[LBK_BRUTE_PATHS] = {
    &lbk_brute_icascade_path,
    &lbk_brute_cascade_path,
    &lbk_brute_prefilter_path,
    &lbk_brute_exact_path,
};

static lbk_status check_params(const lbk_dataset *reference, const lbk_brute_params *params)
{
    LBK_FAIL_IF(params->k < 1, LBK_ERR_CONFIG, "K = %d: the brute engine needs K >= 1",
                params->k);
    LBK_FAIL_IF(params->k > LBK_BRUTE_K_MAX, LBK_ERR_CONFIG,
                "K = %d exceeds the brute engine's maximum %d", params->k, LBK_BRUTE_K_MAX);
    LBK_FAIL_IF(params->groups < 0, LBK_ERR_CONFIG,
                "brute engine: %d groups per query; must be positive (0 = default)",
                params->groups);
    LBK_FAIL_IF(reference->rows >= LBK_NO_INDEX, LBK_ERR_INPUT,
                "brute engine: a shard of %llu rows exceeds the %u rows a 32-bit local index "
                "can address; use more ranks",
                (unsigned long long)reference->rows, LBK_NO_INDEX - 1);
    LBK_FAIL_IF(reference->dim < 1, LBK_ERR_INPUT,
                "brute engine: reference dimension %d; must be at least 1", reference->dim);
    char why[128];
    LBK_FAIL_IF(params->tuning && !lbk_tuning_valid(params->tuning, why, sizeof why),
                LBK_ERR_CONFIG, "brute engine: kernel parameter %s", why);
    const lbk_dtype type = reference->dtype;
    LBK_FAIL_IF(lbk_dataset_type_integer(type) && reference->dim > LBK_INT_KEY_DIM_MAX,
                LBK_ERR_INPUT,
                "brute engine: %s points of dimension %d: exact integer distances hold up to "
                "dimension %d; give reference.type: float32",
                lbk_dtype_name(type), reference->dim, LBK_INT_KEY_DIM_MAX);
    LBK_FAIL_IF(lbk_dataset_type_integer(type) && params->metric == LBK_METRIC_COSINE,
                LBK_ERR_CONFIG,
                "brute engine: cosine searches rows normalised in float32, not %s points",
                lbk_dtype_name(type));
    return LBK_OK;
}

/* What the paths now on add to the memory plan. */
static lbk_brute_needs needs(const lbk_brute *e)
{
    lbk_brute_needs n = {.query_bytes = 0, .row_bytes = 0, .chain = e->k};
    if (e->exact)
        lbk_brute_exact_needs(e->exact, &n);
    if (e->prefilter)
        lbk_brute_prefilter_needs(e->prefilter, &n);
    if (e->cascade)
        lbk_brute_cascade_needs(e, e->cascade, &n);
    if (e->scaled)
        n.row_bytes += 8; /* cosine's row factors (brute_scale.h) */
    if (e->icascade)
        lbk_brute_icascade_needs(e, e->icascade, &n);
    return n;
}

static void drop_prefilter(lbk_brute *e)
{
    lbk_brute_prefilter_destroy(e, e->prefilter);
    e->prefilter = NULL;
}

static void drop_cascade(lbk_brute *e)
{
    lbk_brute_cascade_destroy(e, e->cascade);
    e->cascade = NULL;
    lbk_brute_icascade_destroy(e, e->icascade);
    e->icascade = NULL;
}

/* Residency, chunk and batch from the budget. The cascade only where its
 * extra memory leaves the shard resident in one chunk (its bound rows must
 * cover the whole shard); otherwise the plan without it, so that the cascade
 * never costs the prefilter its residency. */
static lbk_status plan(lbk_brute *e, uint64_t memory_budget)
{
    const uint64_t budget = memory_budget ? memory_budget : lbk_device_global_mem(e->dev) / 2;
    const uint64_t max_alloc = lbk_device_max_alloc(e->dev);
    if (e->cascade || e->icascade) {
        const lbk_brute_needs with = needs(e);
        const uint64_t all = lbk_brute_resident_bytes(e, &with);
        if (all <= budget / 2 && all <= max_alloc) {
            LBK_TRY(lbk_brute_plan(e, budget, max_alloc, &with));
            if (e->resident && e->chunk == e->n)
                return LBK_OK;
        }
        drop_cascade(e);
    }
    const lbk_brute_needs without = needs(e);
    return lbk_brute_plan(e, budget, max_alloc, &without);
}

/* Every path's kernels for work-groups of at most fit->limit. */
static lbk_status build_attempt(lbk_brute *e, lbk_brute_fit *fit)
{
    fit->select = fit->limit;
    fit->dist = SIZE_MAX;
    fit->need = 0;
    LBK_TRY(lbk_brute_exact_kernels(e, e->exact, fit));
    if (e->prefilter)
        LBK_TRY(lbk_brute_prefilter_kernels(e, e->prefilter, fit));
    if (e->cascade)
        LBK_TRY(lbk_brute_cascade_kernels(e, e->cascade, fit));
    if (e->icascade)
        LBK_TRY(lbk_brute_icascade_kernels(e, e->icascade, fit));
    return lbk_brute_dist_fits(e, fit->dist);
}

/* A kernel's own limit can be lower than the device's (registers, local
 * memory): learn it from one build and rebuild every path's with it. */
static lbk_status build_kernels(lbk_brute *e, int work_group_limit)
{
    size_t dev_wg = 0;
    LBK_TRY(
        lbk_device_cl_check(clGetDeviceInfo(lbk_device_id(e->dev), CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                            sizeof dev_wg, &dev_wg, NULL),
                            "querying the device's maximum work-group size"));
    lbk_brute_fit fit = {.limit = dev_wg};
    if (work_group_limit > 0 && (size_t)work_group_limit < fit.limit)
        fit.limit = (size_t)work_group_limit;
    for (int attempt = 0; attempt < 4; attempt++) {
        LBK_TRY(build_attempt(e, &fit));
        if (fit.select >= fit.need)
            return LBK_OK;
        fit.limit = fit.select;
    }
    lbk_error("brute engine: no work-group size fits the kernels on %s",
              lbk_device_description(e->dev));
    return LBK_ERR_DEVICE;
}

/* The hand-down buffers of a path that hands queries down. */
static lbk_status alloc_slots(const lbk_brute *e, lbk_brute_slots *s, const char *path)
{
    const size_t b = (size_t)e->batch;
    s->flags = malloc(b * sizeof *s->flags);
    s->queries = malloc(b * (size_t)e->dim * sizeof *s->queries);
    s->keys = malloc(b * (size_t)e->k * sizeof *s->keys);
    s->index = malloc(b * (size_t)e->k * sizeof *s->index);
    LBK_FAIL_IF(!s->flags || !s->queries || !s->keys || !s->index, LBK_ERR_NOMEM,
                "out of host memory for the %s path's batch buffers", path);
    return LBK_OK;
}

static void free_slots(lbk_brute_slots *s)
{
    free(s->flags);
    free(s->queries);
    free(s->keys);
    free(s->index);
}

/* The batch buffers: the core's, each path's, and the hand-down buffers of
 * every path on but the last. */
static lbk_status alloc_batch(lbk_brute *e)
{
    const lbk_brute_needs n = needs(e);
    LBK_TRY(lbk_brute_alloc(e, &n, e->prefilter != NULL));
    LBK_TRY(lbk_brute_exact_alloc(e, e->exact));
    if (e->prefilter)
        LBK_TRY(lbk_brute_prefilter_alloc(e, e->prefilter));
    if (e->cascade)
        LBK_TRY(lbk_brute_cascade_alloc(e, e->cascade));
    if (e->icascade)
        LBK_TRY(lbk_brute_icascade_alloc(e, e->icascade));
    for (size_t p = 0; p + 1 < LBK_BRUTE_PATHS; p++)
        if (paths[p]->applies(e))
            LBK_TRY(alloc_slots(e, &e->down[p], paths[p]->name));
    return LBK_OK;
}

static const void *shard_rows(const lbk_brute *e, const lbk_dataset *reference)
{
    return e->dtype == LBK_DTYPE_FLOAT32 ? (const void *)reference->points : reference->raw;
}

/* The prefilter's and the cascade's shard data, each dropped where the data
 * does not suit it (the cascade also with the prefilter). A plan made with
 * the cascade is made again without it; one made with a prefilter alone
 * stays, its batch smaller than it need be. */
static lbk_status upload_paths(lbk_brute *e, const lbk_dataset *reference,
                               const lbk_brute_params *params)
{
    const bool planned_cascade = e->cascade != NULL || e->icascade != NULL;
    bool ok = true;
    if (e->prefilter)
        LBK_TRY(lbk_brute_prefilter_upload(e, e->prefilter, shard_rows(e, reference), &ok));
    if (!ok)
        drop_prefilter(e);
    if (e->cascade && !e->prefilter)
        drop_cascade(e);
    if (e->cascade)
        LBK_TRY(
            lbk_brute_cascade_upload(e, e->cascade, reference->points, params->copy_shard, &ok));
    if (e->cascade && !ok)
        drop_cascade(e);
    if (e->icascade)
        LBK_TRY(
            lbk_brute_icascade_upload(e, e->icascade, reference->raw, params->copy_shard, &ok));
    if (e->icascade && !ok)
        drop_cascade(e);
    return planned_cascade && !e->cascade && !e->icascade ? plan(e, params->memory_budget)
                                                          : LBK_OK;
}

/* Everything a non-empty shard needs on the device. */
static lbk_status set_up_shard(lbk_brute *e, const lbk_dataset *reference,
                               const lbk_brute_params *params)
{
    LBK_TRY(lbk_brute_exact_create(e, params, &e->exact));
    /* The bounds are float32 arithmetic on float32 values: float16 rows
     * convert exactly; integer rows take the exact keys alone (the dot path
     * or the per-pair kernel); the cascade is float32's alone
     * (docs/design.md "Compact reference points"). */
    if (!e->int_keys)
        LBK_TRY(lbk_brute_prefilter_create(e, params, &e->prefilter));
    if (e->dtype == LBK_DTYPE_FLOAT32)
        LBK_TRY(lbk_brute_cascade_create(e, params, &e->cascade));
    if (e->int_keys)
        LBK_TRY(lbk_brute_icascade_create(e, params, &e->icascade));
    LBK_TRY(plan(e, params->memory_budget));
    if (e->scaled)
        LBK_TRY(lbk_brute_scale_shard(e, reference->raw));
    LBK_TRY(upload_paths(e, reference, params));
    if (e->dtype != LBK_DTYPE_FLOAT32)
        LBK_TRY(lbk_brute_exact_upload(e, e->exact, reference->raw));
    LBK_TRY(build_kernels(e, params->work_group_limit));
    LBK_TRY(alloc_batch(e));
    LBK_TRY(lbk_brute_place_refs(e, shard_rows(e, reference), params->copy_shard));
    if (e->has_selector) {
        LBK_TRY(e->selector.prepare(e->selector.ctx, e, e->batch, e->chunk));
        /* Its own buffers, as the plan counted them. */
        lbk_brute_count_device(e,
                               e->batch * e->selector.scratch_bytes(e->selector.ctx, e->chunk));
    }
    return LBK_OK;
}

lbk_status lbk_brute_create(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_brute_params *params, lbk_brute **out)
{
    lbk_status st = LBK_OK;
    *out = NULL;
    lbk_brute *e = calloc(1, sizeof *e);
    if (!e) {
        if (params->selector)
            params->selector->destroy(params->selector->ctx);
        lbk_error("out of host memory creating the brute engine");
        return LBK_ERR_NOMEM;
    }
    /* The engine owns the selector from here on, also when it fails. */
    if (params->selector) {
        e->selector = *params->selector;
        e->has_selector = true;
    }
    LBK_TRY_GOTO(st, check_params(reference, params));
    lbk_brute_configure(e, dev, reference, params);
    if (e->n > 0)
        LBK_TRY_GOTO(st, set_up_shard(e, reference, params));
    *out = e;
    e = NULL;
cleanup:
    lbk_brute_destroy(e);
    return st;
}

uint64_t lbk_brute_max_batch(const lbk_brute *engine) { return engine->batch; }

uint64_t lbk_brute_chunk_rows(const lbk_brute *engine) { return engine->chunk; }

uint64_t lbk_brute_peak_device_bytes(const lbk_brute *engine) { return engine->device_peak; }

uint64_t lbk_brute_reference_bytes(const lbk_brute *engine) { return engine->refs_bytes; }

/* The first path from p on that takes batches now: the exact path, last,
 * always does. */
static size_t next_path(const lbk_brute *e, size_t p)
{
    while (!paths[p]->applies(e))
        p++;
    return p;
}

static lbk_status walk(lbk_brute *e, size_t p, const lbk_brute_batch *b);

/* The `count` queries path p flagged, gathered into its buffers, down
 * through path `next` and those below it; their K-lists put back in place. */
static lbk_status hand_down(lbk_brute *e, size_t p, size_t next, const lbk_brute_batch *b,
                            uint64_t count)
{
    const lbk_brute_slots *s = &e->down[p];
    const size_t k = (size_t)e->k, dim = (size_t)e->dim;
    for (uint64_t q = 0, m = 0; q < b->nq; q++)
        if (s->flags[q])
            memcpy(s->queries + m++ * dim, b->queries + q * dim, dim * sizeof *s->queries);
    const lbk_brute_batch sub = {s->queries, count, s->keys, s->index};
    LBK_TRY(walk(e, next, &sub));
    for (uint64_t q = 0, m = 0; q < b->nq; q++) {
        if (!s->flags[q])
            continue;
        memcpy(b->keys + q * k, s->keys + m * k, k * sizeof *b->keys);
        memcpy(b->index + q * k, s->index + m * k, k * sizeof *b->index);
        m++;
    }
    return LBK_OK;
}

/* The batch through path p, and what it hands down through those below. */
static lbk_status walk(lbk_brute *e, size_t p, const lbk_brute_batch *b)
{
    lbk_brute_handoff down = {.flags = e->down[p].flags, .count = 0, .declined = false};
    LBK_TRY(paths[p]->run(e, b, &down));
    /* Every path that takes a batch scores each of its queries against
     * every row (a distance, or a bound that decides what is computed
     * exactly): the count is structural, the same as a per-work-item
     * counter in the kernels would give, without one. */
    if (!down.declined)
        e->timing.distance_evals += e->n * b->nq;
    if (!down.declined && down.count == 0)
        return LBK_OK;
    LBK_FAIL_IF(p + 1 == LBK_BRUTE_PATHS, LBK_ERR_INTERNAL,
                "internal: the brute engine's last path (%s) handed queries down",
                paths[p]->name);
    const size_t next = next_path(e, p + 1);
    return down.declined ? walk(e, next, b) : hand_down(e, p, next, b, down.count);
}

/* Integer keys are exact only for integer queries within the points'
 * range (every |q - r| <= 255): checked before any kernel runs. */
static lbk_status check_int_queries(const lbk_brute *e, const float *queries, uint64_t nq)
{
    const float lo = e->dtype == LBK_DTYPE_UINT8 ? 0.0f : -128.0f;
    const float hi = e->dtype == LBK_DTYPE_UINT8 ? 255.0f : 127.0f;
    const size_t dim = (size_t)e->dim;
    for (size_t i = 0; i < nq * dim; i++) {
        const float v = queries[i];
        LBK_FAIL_IF(!(v >= lo && v <= hi && v == floorf(v)), LBK_ERR_INPUT,
                    "brute engine: a query holds %g (row %llu of its batch, column %zu): %s "
                    "points are searched with exact integer distances, which need integer "
                    "queries in %g..%g; give reference.type: float32",
                    (double)v, (unsigned long long)(i / dim + 1), i % dim + 1,
                    lbk_dtype_name(e->dtype), (double)lo, (double)hi);
    }
    return LBK_OK;
}

bool lbk_brute_int_keys(const lbk_brute *engine) { return engine->int_keys; }

lbk_status lbk_brute_query(lbk_brute *engine, const float *queries, uint64_t nq,
                           lbk_knn_result *result)
{
    memset(&engine->timing, 0, sizeof engine->timing);
    LBK_FAIL_IF(result->k != engine->k || result->queries < nq, LBK_ERR_INTERNAL,
                "internal: brute query result holds %llu x %d slots, needs %llu x %d",
                (unsigned long long)result->queries, result->k, (unsigned long long)nq,
                engine->k);
    const size_t k = (size_t)engine->k;
    if (engine->n == 0) {
        for (size_t i = 0; i < nq * k; i++) {
            result->keys[i] = INFINITY;
            result->index[i] = LBK_NO_INDEX;
        }
        return LBK_OK;
    }
    if (engine->int_keys)
        LBK_TRY(check_int_queries(engine, queries, nq));
    for (uint64_t off = 0, n; off < nq; off += n) {
        n = nq - off < engine->batch ? nq - off : engine->batch;
        const size_t p = next_path(engine, 0);
        if (paths[p]->batch_limit)
            n = paths[p]->batch_limit(engine, n);
        const lbk_brute_batch b = {queries + off * (size_t)engine->dim, n, result->keys + off * k,
                                   result->index + off * k};
        LBK_TRY(walk(engine, p, &b));
    }
    return LBK_OK;
}

void lbk_brute_last_timing(const lbk_brute *engine, lbk_brute_timing *timing)
{
    *timing = engine->timing;
}

void lbk_brute_timing_add(lbk_brute_timing *sum, const lbk_brute_timing *t)
{
    sum->distance_s += t->distance_s;
    sum->select_s += t->select_s;
    sum->final_s += t->final_s;
    sum->fallback_queries += t->fallback_queries;
    sum->prefiltered_queries += t->prefiltered_queries;
    sum->cascade_queries += t->cascade_queries;
    sum->cascade_fallback_queries += t->cascade_fallback_queries;
    sum->cascade_checked_rows += t->cascade_checked_rows;
    sum->distance_evals += t->distance_evals;
}

/* Each path's part, its hand-down buffers, then the core. */
void lbk_brute_destroy(lbk_brute *engine)
{
    if (!engine)
        return;
    drop_cascade(engine);
    drop_prefilter(engine);
    lbk_brute_exact_destroy(engine, engine->exact);
    for (size_t p = 0; p < LBK_BRUTE_PATHS; p++)
        free_slots(&engine->down[p]);
    lbk_brute_core_release(engine);
    free(engine);
}
