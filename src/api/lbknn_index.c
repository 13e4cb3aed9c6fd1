/* The library's index and its searches: the caller's rows become the
 * index's shard (src/index, the search `lbknn run` uses), and the final
 * K-lists its sink receives are gathered on every rank, chunk by chunk,
 * then turned into ids and distances, votes or averaged targets. */
#include "lbknn_impl.h"

#include "alloc_large.h"
#include "classes.h"
#include "device_tuning.h"
#include "enums.h"
#include "index_params.h"
#include "knn.h"
#include "log.h"
#include "normalize.h"
#include "row_split.h"
#include "try.h"
#include "tune_cache.h"
#include "votes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Queries per chunk: the gathered lists of one chunk stay within this many
 * bytes (and a chunk of at least one query). */
#define CHUNK_LIST_BYTES ((uint64_t)64 << 20)

static lbk_status check_finite(const char *what, const float *v, uint64_t rows, int dim)
{
    for (uint64_t r = 0; r < rows; r++)
        for (int j = 0; j < dim; j++)
            LBK_FAIL_IF(!isfinite(v[r * (uint64_t)dim + (uint64_t)j]), LBK_ERR_INPUT,
                        "%s[%llu][%d] = %g: not a finite number (NaN or infinity)", what,
                        (unsigned long long)r, j, (double)v[r * (uint64_t)dim + (uint64_t)j]);
    return LBK_OK;
}

/* What this rank passed, before anything is shared (the points' values
 * are checked as they are copied, copy_shard). */
static lbk_status check_rows(int64_t rows, int dim, const void *points, const int32_t *labels,
                             const double *targets)
{
    LBK_FAIL_IF(rows < 0, LBK_ERR_USAGE, "rows = %lld: must not be negative", (long long)rows);
    LBK_FAIL_IF(dim < 1, LBK_ERR_USAGE, "dim = %d: must be at least 1", dim);
    LBK_FAIL_IF(rows > 0 && !points, LBK_ERR_USAGE, "points is NULL for %lld rows",
                (long long)rows);
    for (int64_t r = 0; labels && r < rows; r++)
        LBK_FAIL_IF(labels[r] < 0, LBK_ERR_INPUT, "labels[%lld] = %d: labels must be >= 0",
                    (long long)r, labels[r]);
    for (int64_t r = 0; targets && r < rows; r++)
        LBK_FAIL_IF(!isfinite(targets[r]), LBK_ERR_INPUT,
                    "targets[%lld] = %g: not a finite number (NaN or infinity)", (long long)r,
                    targets[r]);
    return LBK_OK;
}

/* The rows copied and checked block by block, each block checked while it
 * is still in cache: one pass over the caller's memory, not two. */
static lbk_status copy_finite(float *dst, const float *src, uint64_t rows, int dim)
{
    const uint64_t values = rows * (uint64_t)dim, block = 16384;
    for (uint64_t at = 0; at < values; at += block) {
        const uint64_t n = values - at < block ? values - at : block;
        memcpy(dst + at, src + at, (size_t)n * sizeof *dst);
        bool finite = true;
        for (uint64_t i = 0; i < n; i++)
            finite &= isfinite(dst[at + i]) != 0;
        if (!finite)
            return check_finite("points", src, rows, dim);
    }
    return LBK_OK;
}

/* Collective: the least and largest `value` over the ranks that `count`
 * (a rank with no rows has no say in what rows are like). */
static lbk_status min_max_if(const lbk_comm *comm, bool count, uint64_t value, uint64_t *lo,
                             uint64_t *hi)
{
    *lo = count ? value : UINT64_MAX;
    *hi = count ? value : 0;
    LBK_TRY(lbk_comm_allreduce_u64(comm, lo, LBK_REDUCE_MIN));
    return lbk_comm_allreduce_u64(comm, hi, LBK_REDUCE_MAX);
}

static lbk_status min_max(const lbk_comm *comm, uint64_t value, uint64_t *lo, uint64_t *hi)
{
    return min_max_if(comm, true, value, lo, hi);
}

/* Collective: every rank passed the same kind of rows; the global ids. */
static lbk_status agree_shape(lbknn_index *ix, uint64_t rows, int dim, bool *labels,
                              bool *targets)
{
    const lbk_comm *comm = &ix->context->comm;
    uint64_t lo, hi;
    LBK_TRY(min_max(comm, (uint64_t)dim, &lo, &hi));
    LBK_FAIL_IF(lo != hi, LBK_ERR_USAGE, "ranks passed rows of %llu to %llu dimensions",
                (unsigned long long)lo, (unsigned long long)hi);
    LBK_TRY(min_max(comm, (uint64_t)ix->type, &lo, &hi));
    LBK_FAIL_IF(lo != hi, LBK_ERR_USAGE, "ranks passed points of different types (%s, %s)",
                lbk_dtype_name((lbk_dtype)lo), lbk_dtype_name((lbk_dtype)hi));
    LBK_TRY(min_max_if(comm, rows > 0, *labels, &lo, &hi));
    LBK_FAIL_IF(lo < hi, LBK_ERR_USAGE, "some ranks passed labels and others none");
    *labels = hi == 1;
    LBK_TRY(min_max_if(comm, rows > 0, *targets, &lo, &hi));
    LBK_FAIL_IF(lo < hi, LBK_ERR_USAGE, "some ranks passed targets and others none");
    *targets = hi == 1;
    uint64_t before = 0, total = rows;
    LBK_TRY(lbk_comm_exscan_u64(comm, rows, &before, &total));
    /* `auto` never picks replicate: only the option asks for it. */
    if (ix->options.mpi.partition == LBK_PARTITION_REPLICATE) {
        LBK_TRY(min_max(comm, rows, &lo, &hi));
        LBK_FAIL_IF(lo != hi, LBK_ERR_USAGE,
                    "mpi.partition = replicate: every rank passes every row, but ranks passed "
                    "%llu to %llu rows",
                    (unsigned long long)lo, (unsigned long long)hi);
        before = 0;
        total = rows;
    }
    LBK_FAIL_IF(total == 0, LBK_ERR_USAGE, "no reference rows on any rank");
    ix->rows = total;
    ix->first_row = before;
    ix->local_rows = rows;
    ix->dim = dim;
    return LBK_OK;
}

/* This rank's rows as the index's shard (copies: the caller keeps its own),
 * float32 or compact (lbknn_typed.c). */
static lbk_status copy_shard(lbknn_index *ix, const void *points, const int32_t *labels,
                             const double *targets, lbk_dataset *shard)
{
    lbk_status st = LBK_OK;
    const uint64_t n = ix->local_rows, values = n * (uint64_t)ix->dim;
    const bool compact = ix->type != LBK_DTYPE_FLOAT32;
    *shard = (lbk_dataset){.rows = n, .dim = ix->dim, .first_row = ix->first_row};
    if (!compact)
        shard->points = lbk_alloc_large_logged(values, sizeof(float), "reference points", &st);
    if (st == LBK_OK && labels)
        shard->labels = lbk_alloc_large_logged(n, sizeof(int32_t), "reference labels", &st);
    if (st == LBK_OK && targets)
        ix->targets = lbk_alloc_large_logged(n, sizeof(double), "reference targets", &st);
    if (st != LBK_OK)
        return st;
    ix->targets_first = ix->first_row;
    ix->targets_rows = n;
    if (compact)
        LBK_TRY(lbk_api_shard_compact(ix, ix->type, points, shard));
    else
        LBK_TRY(copy_finite(shard->points, points, n, ix->dim));
    if (labels && n)
        memcpy(shard->labels, labels, (size_t)n * sizeof(int32_t));
    if (targets && n)
        memcpy(ix->targets, targets, (size_t)n * sizeof(double));
    /* As `lbknn run` reads them: cosine's rows normalised once, here
     * (compact ones are widened for it). */
    if (ix->options.knn.metric == LBK_METRIC_COSINE && shard->dtype == LBK_DTYPE_FLOAT32)
        lbk_normalize_rows(shard->points, n, ix->dim);
    return LBK_OK;
}

/* What the index reads of the options. Its lists are knn.k long: the
 * library's searches read them knn.k apart (task, which is no option of
 * the library, stays at its default, never graph's K + 1; said here too so
 * that the layout does not rest on a default). */
static void index_params(lbknn_index *ix)
{
    lbk_index_params_from_job(&ix->options, &ix->params);
    ix->params.k = ix->options.knn.k;
}

/* This rank's kernel parameters, chosen as `lbknn run` chooses them (the
 * options' tuning.* keys, else `lbknn tune`'s cache, else derived from the
 * device): a bad cache file is a warning to the log callback, never a
 * failure. The cache directory is read from the environment at each build,
 * as `lbknn` reads it at each run. */
static void choose_tuning(lbknn_index *ix)
{
    char dir[LBK_PATH_MAX];
    lbk_tune_cache_dir(dir, sizeof dir);
    lbk_device_tuning_from_job(&ix->options, ix->context->device, dir, &ix->tuning, NULL, 0);
    char text[128];
    lbk_tuning_format(&ix->tuning, text, sizeof text);
    snprintf(ix->tuning_text, sizeof ix->tuning_text, "%s (%s)", text,
             lbk_tuning_source_name(ix->tuning.source));
}

/* Collective: every rank's first row into starts (ranks + 1 entries, the
 * last the rows). */
static lbk_status gather_starts(const lbk_comm *comm, uint64_t first, uint64_t rows,
                                uint64_t *starts)
{
    LBK_TRY(lbk_comm_allgather_bytes(comm, &first, starts, (int)sizeof first));
    starts[comm->size] = rows;
    return LBK_OK;
}

/* Collective: which rank passed which rows (the self search's owners), and
 * the lookup of the neighbours' targets over the ranks that hold them. */
static lbk_status share_rows(lbknn_index *ix)
{
    const lbk_comm *comm = &ix->context->comm;
    lbk_status st = LBK_OK;
    uint64_t *holders = NULL;
    ix->starts = calloc((size_t)comm->size + 1, sizeof *ix->starts);
    if (ix->has_targets)
        holders = calloc((size_t)comm->size + 1, sizeof *holders);
    if (!ix->starts || (ix->has_targets && !holders)) {
        lbk_error("out of host memory for the row owners of %d ranks", comm->size);
        st = LBK_ERR_NOMEM;
    }
    st = lbk_comm_agree(comm, st);
    if (st == LBK_OK)
        st = gather_starts(comm, ix->first_row, ix->rows, ix->starts);
    if (st == LBK_OK && ix->has_targets)
        st = gather_starts(comm, ix->targets_first, ix->rows, holders);
    if (st == LBK_OK && ix->has_targets)
        st = lbk_comm_agree(comm, lbk_targets_init(&ix->lookup, comm, ix->targets,
                                                   ix->targets_first, ix->targets_rows, ix->rows,
                                                   holders, ix->plan.replicated));
    free(holders);
    return st;
}

static lbk_status build(lbknn_index *ix, int64_t rows, int dim, lbknn_dtype type,
                        const void *points, const int32_t *labels, const double *targets)
{
    const lbk_comm *comm = &ix->context->comm;
    lbk_dataset shard = {0};
    lbk_status st = lbk_api_dtype(type, &ix->type);
    if (st == LBK_OK)
        st = check_rows(rows, dim, points, labels, targets);
    if (st == LBK_OK)
        st = lbk_api_check_type(ix);
    LBK_TRY(lbk_comm_agree(comm, st));
    LBK_TRY(lbk_comm_agree(comm, lbk_job_validate(&ix->options)));
    index_params(ix);
    choose_tuning(ix);
    bool has_labels = labels != NULL, has_targets = targets != NULL;
    LBK_TRY(
        lbk_comm_agree(comm, agree_shape(ix, (uint64_t)rows, dim, &has_labels, &has_targets)));
    lbk_index_plan_make(&ix->params, dim, ix->rows, comm->size, &ix->plan);
    LBK_TRY(lbk_classes_count(comm, labels, (uint64_t)rows, &ix->classes));
    ix->has_targets = has_targets;
    st = lbk_comm_agree(comm, copy_shard(ix, points, labels, targets, &shard));
    if (st == LBK_OK)
        st = lbk_index_create(comm, ix->context->device, &ix->tuning, &ix->params, &ix->plan,
                              ix->rows, has_labels, &shard, NULL, &ix->index);
    lbk_dataset_free(&shard);
    if (st == LBK_OK)
        st = share_rows(ix);
    return st;
}

/* Collective: an index of the context with the options (the defaults
 * where NULL), before anything is built or loaded into it. */
static lbk_status index_new(lbknn_context *context, const lbknn_options *options,
                            lbknn_index **out)
{
    lbknn_index *ix = calloc(1, sizeof *ix);
    const lbk_status st = lbk_comm_agree(&context->comm, ix ? LBK_OK : LBK_ERR_NOMEM);
    if (st != LBK_OK) {
        free(ix);
        return st;
    }
    ix->context = context;
    if (options)
        ix->options = options->job;
    else
        lbk_job_defaults(&ix->options);
    *out = ix;
    return LBK_OK;
}

lbknn_status lbknn_index_build_typed(lbknn_context *context, const lbknn_options *options,
                                     int64_t rows, int dim, lbknn_dtype type, const void *points,
                                     const int32_t *labels, const double *targets,
                                     lbknn_index **out)
{
    if (!context || !out)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, context, context->error);
    *out = NULL;
    lbknn_index *ix = NULL;
    lbk_status st = index_new(context, options, &ix);
    if (st == LBK_OK)
        st = build(ix, rows, dim, type, points, labels, targets);
    if (st == LBK_OK) {
        *out = ix;
        ix = NULL;
    }
    lbknn_index_destroy(ix);
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_index_build(lbknn_context *context, const lbknn_options *options, int64_t rows,
                               int dim, const float *points, const int32_t *labels,
                               const double *targets, lbknn_index **out)
{
    return lbknn_index_build_typed(context, options, rows, dim, LBKNN_DTYPE_FLOAT32, points,
                                   labels, targets, out);
}

lbknn_status lbknn_index_save(lbknn_index *ix, const char *dir)
{
    if (!ix || !dir || !dir[0])
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    const lbk_index_save_extra extra = {
        .reference = "the library's rows (lbknn_index_build)",
        .targets_saved = ix->has_targets,
        .targets = ix->targets,
        .targets_first = ix->targets_first,
        .targets_rows = ix->targets_rows,
    };
    return lbk_api_end(&call, lbk_index_save(ix->index, dir, &extra));
}

/* Collective: the manifest on every rank, checked on rank 0 against the
 * options and the rank count. */
static lbk_status load_manifest(lbknn_index *ix, const char *dir, char **manifest)
{
    const lbk_comm *comm = &ix->context->comm;
    LBK_TRY(lbk_comm_agree(comm, lbk_job_validate(&ix->options)));
    index_params(ix);
    choose_tuning(ix);
    LBK_TRY(lbk_index_manifest_share(comm, dir, manifest));
    const bool fits = comm->rank != 0 || lbk_index_saved_fits(*manifest, dir, &ix->params, false);
    return lbk_comm_agree(comm, fits ? LBK_OK : LBK_ERR_CONFIG);
}

static lbk_status load(lbknn_index *ix, const char *dir)
{
    const lbk_comm *comm = &ix->context->comm;
    char *m = NULL;
    lbk_index_saved *saved = NULL;
    lbk_dataset shard = {0};
    bool labels = false, targets = false;
    lbk_status st = load_manifest(ix, dir, &m);
    if (st == LBK_OK)
        st = lbk_comm_agree(
            comm, lbk_index_saved_shape(m, dir, &ix->rows, &ix->dim, &labels, &targets));
    if (st == LBK_OK) {
        lbk_index_plan_make(&ix->params, ix->dim, ix->rows, comm->size, &ix->plan);
        st = lbk_comm_agree(comm,
                            lbk_index_saved_read(dir, m, comm, &ix->params, &ix->plan, ix->dim,
                                                 ix->rows, labels, targets, &shard, &saved));
    }
    if (st == LBK_OK)
        st = lbk_classes_count(comm, shard.labels, shard.rows, &ix->classes);
    if (st == LBK_OK) {
        ix->has_targets = targets;
        /* The self search's rows: the even split (the targets keep the
         * rows each rank saved them for). */
        lbk_row_split_range(ix->rows, comm->size, comm->rank, &ix->first_row, &ix->local_rows);
        if (ix->plan.replicated) {
            ix->first_row = 0;
            ix->local_rows = ix->rows;
        }
        if (targets)
            ix->targets =
                lbk_index_saved_take_targets(saved, &ix->targets_first, &ix->targets_rows);
        ix->type = shard.dtype; /* queries of the saved points' type are taken too */
        st = lbk_index_create_saved(comm, ix->context->device, &ix->tuning, &ix->params,
                                    &ix->plan, ix->rows, labels, &shard, NULL, saved, &ix->index);
    }
    lbk_dataset_free(&shard);
    lbk_index_saved_free(saved);
    free(m);
    return st == LBK_OK ? share_rows(ix) : st;
}

lbknn_status lbknn_index_load(lbknn_context *context, const lbknn_options *options,
                              const char *dir, lbknn_index **out)
{
    if (!context || !out || !dir || !dir[0])
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, context, context->error);
    *out = NULL;
    lbknn_index *ix = NULL;
    lbk_status st = index_new(context, options, &ix);
    if (st == LBK_OK)
        st = load(ix, dir);
    if (st == LBK_OK) {
        *out = ix;
        ix = NULL;
    }
    lbknn_index_destroy(ix);
    return lbk_api_end(&call, st);
}

int64_t lbknn_index_rows(const lbknn_index *ix) { return ix ? (int64_t)ix->rows : 0; }
int lbknn_index_dim(const lbknn_index *ix) { return ix ? ix->dim : 0; }
int32_t lbknn_index_classes(const lbknn_index *ix) { return ix ? ix->classes : 0; }
int lbknn_index_has_targets(const lbknn_index *ix) { return ix && ix->has_targets; }
const char *lbknn_index_error(const lbknn_index *ix) { return ix ? ix->error : ""; }

const char *lbknn_index_engine(const lbknn_index *ix)
{
    return ix ? lbk_engine_name(ix->plan.engine) : "";
}

const char *lbknn_index_partition(const lbknn_index *ix)
{
    return ix ? lbk_partition_name(ix->plan.partition) : "";
}

const char *lbknn_index_tuning(const lbknn_index *ix) { return ix ? ix->tuning_text : ""; }

void lbknn_index_destroy(lbknn_index *ix)
{
    if (!ix)
        return;
    lbk_api_call call; /* as lbknn_context_destroy's */
    lbk_api_begin(&call, ix->context, NULL);
    lbk_index_destroy(ix->index);
    lbk_targets_free(&ix->lookup);
    lbk_alloc_large_free(ix->targets);
    free(ix->starts);
    (void)lbk_api_end(&call, LBK_OK);
    free(ix);
}

/* ---- searches ---- */

/* The sink: a slice of final lists into the chunk's gathered lists. */
typedef struct {
    lbk_knn_candidate *lists; /* the chunk's, K per query */
    int k;
} gather_sink;

static lbk_status gather_emit(void *user, const lbk_index_slice *slice)
{
    const gather_sink *g = user;
    const uint64_t at = (slice->first + slice->slice_first) * (uint64_t)g->k;
    memcpy(g->lists + at, slice->lists,
           (size_t)slice->slice_count * (size_t)g->k * sizeof *g->lists);
    return LBK_OK;
}

/* Collective: the final K-lists of `count` queries (every rank's copy of
 * them), on every rank. Each query's list comes from one rank's sink, the
 * rest of the buffer stays zero, so an OR over the ranks gathers it. */
static lbk_status search_chunk(lbknn_index *ix, const float *points, uint64_t count,
                               lbk_knn_candidate *lists)
{
    const lbk_comm *comm = &ix->context->comm;
    const int k = ix->options.knn.k;
    memset(lists, 0, (size_t)count * (size_t)k * sizeof *lists);
    LBK_TRY(lbk_index_prepare(ix->index, count, 0));
    const float *mine = points;
    if (ix->plan.owns_slice) {
        uint64_t first = 0, n = 0;
        lbk_index_query_slice(count, comm, &first, &n);
        mine = points + first * (uint64_t)ix->dim;
    }
    gather_sink g = {lists, k};
    const lbk_index_sink sink = {gather_emit, NULL, &g, false, 0, NULL};
    LBK_TRY(lbk_index_search(ix->index, mine, &sink));
    return lbk_comm_allreduce_or_bytes(comm, lists, count * (uint64_t)k * sizeof *lists);
}

/* What a search makes of each chunk's lists. */
typedef struct search_job search_job;
typedef lbk_status (*chunk_fn)(search_job *job, uint64_t first, uint64_t count,
                               const lbk_knn_candidate *lists);
struct search_job {
    lbknn_index *ix;
    int k;
    chunk_fn use;
    /* outputs (by kind of search) */
    int64_t *ids;
    float *distances;
    lbk_votes votes;
    int32_t *labels;
    double *probabilities;
    double *values;
    double *neighbour_targets; /* a chunk's, k per query */
};

static lbk_status check_search(const lbknn_index *ix, int64_t queries, const float *points, int k)
{
    LBK_FAIL_IF(queries < 0, LBK_ERR_USAGE, "queries = %lld: must not be negative",
                (long long)queries);
    LBK_FAIL_IF(k < 1 || k > ix->options.knn.k, LBK_ERR_USAGE,
                "k = %d: must be 1 .. %d (the index's knn.k)", k, ix->options.knn.k);
    LBK_FAIL_IF(queries > 0 && !points, LBK_ERR_USAGE, "points is NULL for %lld queries",
                (long long)queries);
    /* Every rank's copy: under the spatial partition each searches its own. */
    return check_finite("queries", points, (uint64_t)queries, ix->dim);
}

/* Collective: every chunk searched and used. */
static lbk_status run_search(search_job *job, int64_t queries, const float *points,
                             lbk_status checked)
{
    lbknn_index *ix = job->ix;
    const lbk_comm *comm = &ix->context->comm;
    const uint64_t nq = (uint64_t)(queries > 0 ? queries : 0);
    const uint64_t list_bytes = (uint64_t)ix->options.knn.k * sizeof(lbk_knn_candidate);
    uint64_t chunk = CHUNK_LIST_BYTES / list_bytes;
    chunk = chunk < 1 ? 1 : chunk > nq ? nq : chunk;
    /* Every rank must agree on the query count before chunking by it. */
    uint64_t lo = nq, hi = nq;
    lbk_status st = lbk_comm_agree(comm, checked);
    if (st == LBK_OK)
        st = min_max(comm, nq, &lo, &hi);
    if (st == LBK_OK && lo != hi) {
        lbk_error("ranks passed %llu to %llu queries: every rank passes the same ones",
                  (unsigned long long)lo, (unsigned long long)hi);
        st = LBK_ERR_USAGE;
    }
    lbk_knn_candidate *lists = NULL;
    float *normalized = NULL; /* cosine: a chunk's queries, normalised as the references */
    const bool cosine = ix->options.knn.metric == LBK_METRIC_COSINE;
    if (st == LBK_OK)
        lists = lbk_alloc_large_logged(chunk, (size_t)list_bytes, "gathered K-lists", &st);
    if (st == LBK_OK && cosine)
        normalized =
            lbk_alloc_large_logged(chunk * (uint64_t)ix->dim, sizeof(float), "queries", &st);
    if (st == LBK_OK && ix->has_targets && job->values)
        job->neighbour_targets = lbk_alloc_large_logged(chunk * (uint64_t)job->k, sizeof(double),
                                                        "neighbour targets", &st);
    st = lbk_comm_agree(comm, st);
    for (uint64_t at = 0; at < nq && st == LBK_OK; at += chunk) {
        const uint64_t n = nq - at < chunk ? nq - at : chunk;
        const float *rows = points + at * (uint64_t)ix->dim;
        if (cosine) {
            memcpy(normalized, rows, (size_t)(n * (uint64_t)ix->dim) * sizeof(float));
            lbk_normalize_rows(normalized, n, ix->dim);
            rows = normalized;
        }
        st = search_chunk(ix, rows, n, lists);
        if (st == LBK_OK)
            st = job->use(job, at, n, lists);
    }
    lbk_alloc_large_free(lists);
    lbk_alloc_large_free(normalized);
    lbk_alloc_large_free(job->neighbour_targets);
    return st;
}

static lbk_status use_lists(search_job *job, uint64_t first, uint64_t count,
                            const lbk_knn_candidate *lists)
{
    const int k = job->k, kk = job->ix->options.knn.k;
    const lbk_metric metric = job->ix->options.knn.metric;
    for (uint64_t q = 0; q < count; q++)
        for (int j = 0; j < k; j++) {
            const lbk_knn_candidate *c = lists + q * (uint64_t)kk + (uint64_t)j;
            const bool pad = c->id == UINT64_MAX;
            const uint64_t at = (first + q) * (uint64_t)k + (uint64_t)j;
            if (job->ids)
                job->ids[at] = pad ? -1 : (int64_t)c->id;
            if (job->distances)
                job->distances[at] = pad ? INFINITY : lbk_knn_key_to_distance(metric, c->key);
        }
    return LBK_OK;
}

lbknn_status lbknn_index_search_typed(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                      const void *points, int k, int64_t *ids, float *distances)
{
    if (!ix)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    lbk_api_queries q;
    lbk_status st = lbk_api_queries_widen(ix, queries, type, points, &q);
    if (st == LBK_OK)
        st = check_search(ix, queries, q.points, k);
    search_job job = {.ix = ix, .k = k, .use = use_lists, .ids = ids, .distances = distances};
    st = run_search(&job, queries, q.points, st);
    lbk_api_queries_free(&q);
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_index_search(lbknn_index *ix, int64_t queries, const float *points, int k,
                                int64_t *ids, float *distances)
{
    return lbknn_index_search_typed(ix, queries, LBKNN_DTYPE_FLOAT32, points, k, ids, distances);
}

/* Collective: agreed, as the votes may fail on one rank alone (memory)
 * and every rank goes on to the next chunk's search together. */
static lbk_status use_votes(search_job *job, uint64_t first, uint64_t count,
                            const lbk_knn_candidate *lists)
{
    const uint64_t classes = (uint64_t)job->votes.classes;
    const lbk_votes_labels out = {
        job->labels ? job->labels + first : NULL,
        job->probabilities ? job->probabilities + first * classes : NULL, NULL, NULL};
    return lbk_comm_agree(&job->ix->context->comm,
                          lbk_votes_classify(&job->votes, lists, count, &out));
}

/* How a search's first k neighbours of lists knn.k long vote. */
static lbk_votes votes_of(const lbknn_index *ix, int k, lbknn_weights weights, double temperature)
{
    const lbk_classify_rule rule = {ix->options.knn.metric, (lbk_weights)weights, temperature};
    return (lbk_votes){rule, k, ix->options.knn.k, ix->classes};
}

lbk_status lbk_api_check_weights(const lbknn_index *ix, lbknn_weights weights, double temperature,
                                 bool regress)
{
    LBK_FAIL_IF(weights != LBKNN_WEIGHTS_UNIFORM && weights != LBKNN_WEIGHTS_DISTANCE &&
                    (regress || weights != LBKNN_WEIGHTS_SOFTMAX),
                LBK_ERR_USAGE, "weights = %d: expected uniform, distance%s", (int)weights,
                regress ? "" : " or softmax");
    LBK_FAIL_IF(weights == LBKNN_WEIGHTS_DISTANCE && ix->options.knn.metric == LBK_METRIC_IP,
                LBK_ERR_USAGE, "distance weights need a distance; metric ip has none");
    LBK_FAIL_IF(weights == LBKNN_WEIGHTS_SOFTMAX && !(temperature > 0 && isfinite(temperature)),
                LBK_ERR_USAGE, "temperature = %g: must be a positive number", temperature);
    return LBK_OK;
}

lbknn_status lbknn_index_classify_typed(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                        const void *points, int k, lbknn_weights weights,
                                        double temperature, int32_t *labels,
                                        double *probabilities)
{
    if (!ix)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    lbk_api_queries q;
    lbk_status st = lbk_api_queries_widen(ix, queries, type, points, &q);
    if (st == LBK_OK)
        st = check_search(ix, queries, q.points, k);
    if (st == LBK_OK && ix->classes == 0) {
        lbk_error("classify: the index was built without labels");
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK)
        st = lbk_api_check_weights(ix, weights, temperature, false);
    search_job job = {
        .ix = ix, .k = k, .use = use_votes, .labels = labels, .probabilities = probabilities};
    job.votes = votes_of(ix, k, weights, temperature);
    st = run_search(&job, queries, q.points, st);
    lbk_api_queries_free(&q);
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_index_classify(lbknn_index *ix, int64_t queries, const float *points, int k,
                                  lbknn_weights weights, double temperature, int32_t *labels,
                                  double *probabilities)
{
    return lbknn_index_classify_typed(ix, queries, LBKNN_DTYPE_FLOAT32, points, k, weights,
                                      temperature, labels, probabilities);
}

/* Collective: each neighbour's target, from the rank that holds it. */
static lbk_status use_targets(search_job *job, uint64_t first, uint64_t count,
                              const lbk_knn_candidate *lists)
{
    const lbk_votes *v = &job->votes;
    double *t = job->neighbour_targets;
    LBK_TRY(lbk_targets_lookup(&job->ix->lookup, lists, count, v->stride, v->k, t, LBK_OK));
    const lbk_votes_values out = {job->values + first, NULL, NULL};
    return lbk_votes_regress(v, lists, t, count, &out);
}

lbknn_status lbknn_index_regress_typed(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                       const void *points, int k, lbknn_weights weights,
                                       double *values)
{
    if (!ix)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    lbk_api_queries q;
    lbk_status st = lbk_api_queries_widen(ix, queries, type, points, &q);
    if (st == LBK_OK)
        st = check_search(ix, queries, q.points, k);
    /* Every rank knows whether the index has targets: they were agreed. */
    if (st == LBK_OK && !ix->has_targets) {
        lbk_error("regress: the index was built without targets");
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK && !values) {
        lbk_error("regress: values must not be NULL");
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK)
        st = lbk_api_check_weights(ix, weights, 0, true);
    search_job job = {.ix = ix, .k = k, .use = use_targets, .values = values};
    job.votes = votes_of(ix, k, weights, 0);
    st = run_search(&job, queries, q.points, st);
    lbk_api_queries_free(&q);
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_index_regress(lbknn_index *ix, int64_t queries, const float *points, int k,
                                 lbknn_weights weights, double *values)
{
    return lbknn_index_regress_typed(ix, queries, LBKNN_DTYPE_FLOAT32, points, k, weights,
                                     values);
}
