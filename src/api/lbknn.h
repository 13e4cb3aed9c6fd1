/* lbknn: exact k-nearest-neighbour search, classification and regression,
 * on OpenCL devices, over MPI ranks. The public C interface.
 *
 * Results are exact and byte-identical for any rank count, device, engine
 * and partition, and identical to `lbknn run` on the same data and options:
 * both go through the same search (docs/library.md).
 *
 * Conventions:
 *  - Every fallible function returns an lbknn_status; LBKNN_OK is 0. On
 *    failure the handle's message (lbknn_*_error) says what went wrong, in
 *    one line; nothing is printed and the process is never exited. Messages
 *    and warnings also go to the log callback, when one is set (a kernel
 *    compiler's log after a failed build comes as one multi-line message).
 *  - Handles are opaque. Threads: one thread at a time per context (a
 *    context, its indexes and the options passed to them); contexts used
 *    in different threads are independent (messages, ranks, devices), as
 *    zstd's and FAISS's are. Options and contexts may move between threads
 *    between calls. Two threads that make collective calls over MPI
 *    communicators at the same time need MPI started with
 *    MPI_THREAD_MULTIPLE; a context of this process alone (NULL
 *    communicator) makes no MPI call (docs/library.md, "Threads").
 *  - Options are the job file's keys that the library uses (index,
 *    device, kernel parameters: knn.k, knn.metric, knn.engine, device.*,
 *    tree.*, tuning.*, mpi.partition, mpi.merge, reference.type), set by name:
 *    lbknn_options_set(o, "knn.metric", "cosine"); the same names, values
 *    and checks as a job file (configs/README.md). Any other key is
 *    refused (LBKNN_ERR_CONFIG, with a message naming the keys taken).
 *  - With MPI, the functions marked "collective" must be called by every
 *    rank of the context's communicator, in the same order. A failure on
 *    any rank is returned on every rank (the others' message says a rank
 *    failed; the failing rank's says why).
 *  - The caller's arrays are read during the call and never kept.
 *
 * Link with -llbknn (pkg-config lbknn, or CMake find_package(lbknn)). */
#ifndef LBKNN_H
#define LBKNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The interface version this header declares; lbknn_version() is the
 * library's. The shared library's SONAME changes with the major version.
 * These three lines are the one place the version is written: the build,
 * the packages and the string below all read them (docs/development.md,
 * "Releases"). */
#define LBKNN_VERSION_MAJOR 0
#define LBKNN_VERSION_MINOR 2
#define LBKNN_VERSION_PATCH 0
#define LBKNN_VERSION_TEXT_(n) #n
#define LBKNN_VERSION_NUMBER_(n) LBKNN_VERSION_TEXT_(n)
/* "MAJOR.MINOR.PATCH", from the three above. */
#define LBKNN_VERSION_STRING                                                                     \
    LBKNN_VERSION_NUMBER_(LBKNN_VERSION_MAJOR)                                                   \
    "." LBKNN_VERSION_NUMBER_(LBKNN_VERSION_MINOR) "." LBKNN_VERSION_NUMBER_(LBKNN_VERSION_PATCH)

/* The values are fixed. Each has its message (lbknn_status_string), and
 * every failure inside the library maps to one of them, by one list that
 * the build checks against this enum (src/core/status.h). */
typedef enum {
    LBKNN_OK = 0,
    LBKNN_ERR_USAGE = 1,    /* a bad argument: a NULL handle, k out of range, ... */
    LBKNN_ERR_CONFIG = 2,   /* a bad option name or value */
    LBKNN_ERR_INPUT = 3,    /* bad data: a non-finite value, a negative label, ... */
    LBKNN_ERR_IO = 4,       /* reading or writing a file */
    LBKNN_ERR_NOMEM = 5,    /* host or device memory */
    LBKNN_ERR_DEVICE = 6,   /* OpenCL, or no device of the type asked */
    LBKNN_ERR_MPI = 7,      /* an MPI call failed */
    LBKNN_ERR_REMOTE = 8,   /* another rank failed (its message says why) */
    LBKNN_ERR_INTERNAL = 9, /* an invariant failed: a bug, please report it */
} lbknn_status;

/* How neighbours vote (classification) or average (regression):
 * uniform, 1/distance (scikit-learn's rules: when some neighbour is at
 * distance 0, only those count, with weight 1), or softmax of the
 * similarity over a temperature (classification only). */
typedef enum {
    LBKNN_WEIGHTS_UNIFORM = 0,
    LBKNN_WEIGHTS_DISTANCE = 1,
    LBKNN_WEIGHTS_SOFTMAX = 2,
} lbknn_weights;

typedef enum { LBKNN_LOG_ERROR = 0, LBKNN_LOG_WARNING = 1, LBKNN_LOG_INFO = 2 } lbknn_log_level;
/* One message, one line without its newline, as `lbknn` would print it. */
typedef void (*lbknn_log_fn)(void *user, lbknn_log_level level, const char *message);

/* The type of the values of an array of points (lbknn_index_build_typed,
 * the _typed searches): row-major, C order, like the float32 rows of the
 * untyped calls. FLOAT16 is IEEE binary16, passed as its 16-bit patterns
 * (NumPy's float16, _Float16). The values are fixed. */
typedef enum {
    LBKNN_DTYPE_FLOAT32 = 0,
    LBKNN_DTYPE_UINT8 = 1,
    LBKNN_DTYPE_INT8 = 2,
    LBKNN_DTYPE_FLOAT16 = 3,
} lbknn_dtype;

typedef struct lbknn_options lbknn_options;
typedef struct lbknn_context lbknn_context;
typedef struct lbknn_index lbknn_index;

/* "0.2.0": the library's version (may be newer than the header's). */
const char *lbknn_version(void);
/* What this library is and runs with, as `lbknn --version` says it: one
 * "key: value" line each for version, commit (or "release"), build_type,
 * compiler, and the opencl, mpi and hdf5 libraries this process loaded
 * (asked of them on the first call; MPI need not be started). Never NULL;
 * the text lives as long as the library. */
const char *lbknn_build_info(void);
/* "invalid argument", "out of memory", ...; never NULL. */
const char *lbknn_status_string(lbknn_status status);
/* Every message of every handle, from now on, to `fn` (NULL: none, the
 * default), except those of a context with a callback of its own
 * (lbknn_context_set_log_callback). Messages are also kept per handle
 * (lbknn_*_error). May be called from any thread; `fn` is called on the
 * thread of the call that logs, so from several threads at once when
 * contexts are used in several. A call already running on another thread
 * keeps the callback it began with: the old `user` must stay valid until
 * such calls return. */
void lbknn_set_log_callback(lbknn_log_fn fn, void *user);

/* ---- Options: the job's keys the library uses, with the job's defaults
 * (K = 5, L2, engine auto, any device preferring GPUs, partition auto,
 * tuning cache on, ...). ---- */
lbknn_status lbknn_options_create(lbknn_options **out);
/* key "section.key" of the job reference, value as in a job file
 * ("knn.k", "7"; "device.type", "cpu"; "device.list", "[0, 1]"). The keys
 * taken: knn.k, knn.metric, knn.engine, device.* (type, list, threads,
 * batch, groups, memory_mb), tree.* (split, sort, verify), tuning.*
 * (cache, lanes, block_queries, block_vectors, tile_blocks, slice,
 * segment_log2), mpi.partition, mpi.merge, reference.type (the width the
 * points are kept at: lbknn_index_build_typed); any other key (task,
 * knn.weights, reference.path, output.*, ...: `lbknn run`'s alone) is
 * LBKNN_ERR_CONFIG, "KEY: not an option of the library (it takes: ...)".
 * On error the options are unchanged. */
lbknn_status lbknn_options_set(lbknn_options *options, const char *key, const char *value);
/* The last failure's message ("" when none). */
const char *lbknn_options_error(const lbknn_options *options);
void lbknn_options_destroy(lbknn_options *options);

/* ---- Context: one device per process, and the ranks that share work. ----
 * Collective. `mpi_comm` is the address of an MPI_Comm the caller owns
 * (e.g. &comm; from mpi4py, MPI._addressof(comm)): the ranks of that
 * communicator share every index built in this context; the library uses
 * a duplicate of it, freed by lbknn_context_destroy (collective too). NULL:
 * this process alone, without any MPI call (MPI need not be started, and
 * the library never starts it). The device comes from the options'
 * device.type and device.list (else the node-local rank picks among the
 * devices). On failure *out is
 * NULL and `error` (if not NULL, `error_size` bytes) gets the message. */
lbknn_status lbknn_context_create(const lbknn_options *options, const void *mpi_comm,
                                  lbknn_context **out, char *error, size_t error_size);
/* Keep the device's built kernels in `dir` (created when missing; NULL or
 * "" = no such cache, the default) and load them from there in later
 * processes: an index's first build then skips the kernel compiler.
 * `lbknn run` uses $XDG_CACHE_HOME/lbknn/programs (else
 * ~/.cache/lbknn/programs), which the library may share. Not collective. */
lbknn_status lbknn_context_set_program_cache(lbknn_context *context, const char *dir);
/* The messages of this context and its indexes to `fn` instead of the
 * process's callback (NULL: back to the process's), those of `level` and
 * more severe only (LBKNN_LOG_ERROR: errors; LBKNN_LOG_INFO, the default:
 * all; with `fn` NULL the level still filters what this context sends the
 * process's callback); the handles' messages keep every error either way.
 * lbknn_context_create's own messages go to the process's callback. Not
 * collective. */
lbknn_status lbknn_context_set_log_callback(lbknn_context *context, lbknn_log_fn fn, void *user,
                                            lbknn_log_level level);
int lbknn_context_rank(const lbknn_context *context);
int lbknn_context_size(const lbknn_context *context);
/* "<device name> [index i, node rank r]". */
const char *lbknn_context_device(const lbknn_context *context);
const char *lbknn_context_error(const lbknn_context *context);
void lbknn_context_destroy(lbknn_context *context);

/* ---- Index: reference points on the context's ranks. ----
 * Collective. Each rank passes its own `rows` x `dim` float32 rows
 * (row-major, C order; rows may be 0 on some ranks, not on all), and
 * optionally one int32 label (>= 0) or one float64 target per row: the
 * ranks that pass rows all pass labels or none, targets or none (a rank
 * with no rows may pass NULL either way). Global ids are the rows in
 * rank order: rank 0's first, then rank 1's, ... With the option
 * mpi.partition = replicate every rank passes all rows (the same ones).
 * Options used: knn.k (the largest k a search may ask), knn.metric,
 * knn.engine, tree.*, mpi.partition, mpi.merge, device.batch,
 * device.groups, device.memory_mb, and tuning.*: the device's kernel
 * parameters are chosen as `lbknn run` chooses them, the options'
 * tuning.* keys (those not 0) over `lbknn tune`'s cache for this device
 * ($XDG_CACHE_HOME/lbknn, else ~/.cache/lbknn; read when tuning.cache is
 * true, the default; a damaged or foreign file is a warning to the log
 * callback) over the parameters derived from the device
 * (lbknn_index_tuning says which ran; results never depend on them). The
 * arrays are copied; the caller may free them on return. On failure *out
 * is NULL and the context's message says why. */
lbknn_status lbknn_index_build(lbknn_context *context, const lbknn_options *options, int64_t rows,
                               int dim, const float *points, const int32_t *labels,
                               const double *targets, lbknn_index **out);

/* Compact reference points (docs/design.md "Compact reference points"):
 * lbknn_index_build with each rank's rows of `type`, kept at their own
 * width (one byte a value for UINT8 and INT8, two for FLOAT16) on the host
 * and the device where `lbknn run` would keep a file of that type: brute
 * force over any partition, the k-d tree (uint8 and int8 up to 258
 * dimensions), every task. uint8 and int8 are then searched with exact
 * integer distances (keys exact, reported as their float32 rounding, ties
 * by id; dimension <= 32767), float16 as their exact float32 values.
 * Elsewhere (cosine, brute force's radius search, uint8/int8 beyond 258
 * dimensions for the k-d tree or the spatial partition, and the brute
 * engine's float32 prefilter where it is faster under reference.type
 * auto) they are widened to float32, exactly,
 * and rank 0 says why in one line to the log callback ("uint8 reference
 * points widened to float32: ..."), as `lbknn run` says it. The option
 * reference.type, as the job key: auto (the default) keeps `type` where
 * it pays, as above; float32 widens; the name of `type` keeps them
 * compact also where the float32 prefilter would be faster; another type
 * is LBKNN_ERR_INPUT. Every rank passes the same type; FLOAT16 values
 * must be finite. lbknn_index_dtype says what the index keeps.
 * lbknn_index_build is this call with LBKNN_DTYPE_FLOAT32. */
lbknn_status lbknn_index_build_typed(lbknn_context *context, const lbknn_options *options,
                                     int64_t rows, int dim, lbknn_dtype type, const void *points,
                                     const int32_t *labels, const double *targets,
                                     lbknn_index **out);
/* The type this index keeps its points at now: the build's type, or
 * FLOAT32 where they were widened. A compact index is widened (once,
 * collectively, said as above) by the first call that reads float32
 * points: brute force's radius calls. A saved and loaded index keeps it. */
lbknn_dtype lbknn_index_dtype(const lbknn_index *index);

/* A saved index (docs/design.md section 15; the files of `lbknn build`).
 * Collective. lbknn_index_save writes each rank's part into the directory
 * `dir` (created if missing) with a manifest of what it was made for;
 * lbknn_index_load creates the index from it: on the saved rank count
 * without building, each rank reading its own files; on another rank
 * count the ranks regroup the saved rows into their row shards and build
 * as a fresh lbknn_index_build would (about a build's cost). Either way
 * searches answer exactly as the saved index's. `options` as for
 * lbknn_index_build; an index saved for another knn.metric, tree.split,
 * engine, partition (as resolved on the saved rank count) or format
 * version, or a missing or corrupted file (size and CRC32), is refused
 * with LBKNN_ERR_INPUT or LBKNN_ERR_CONFIG and a message naming it. The
 * index of `lbknn build` loads here too when the options agree. */
lbknn_status lbknn_index_save(lbknn_index *index, const char *dir);
lbknn_status lbknn_index_load(lbknn_context *context, const lbknn_options *options,
                              const char *dir, lbknn_index **out);

/* The reference set's rows over every rank, its dimension, the largest
 * label + 1 (0 without labels: classify's probability columns), whether it
 * has targets, and the engine and partition chosen ("kdtree", "brute";
 * "shard", "spatial", "replicate"). */
int64_t lbknn_index_rows(const lbknn_index *index);
int lbknn_index_dim(const lbknn_index *index);
int32_t lbknn_index_classes(const lbknn_index *index);
int lbknn_index_has_targets(const lbknn_index *index);
const char *lbknn_index_engine(const lbknn_index *index);
const char *lbknn_index_partition(const lbknn_index *index);
/* The kernel parameters this rank's device runs the index with, and where
 * they came from, as `lbknn run`'s summary says them: "lanes=8 block=6x2
 * tile=8 slice=128 segment=2^16 (derived)"; "(tuned)": `lbknn tune`'s
 * cache; "(job)": the options' tuning.* keys. Per rank (each rank has its
 * own device); results never depend on them. */
const char *lbknn_index_tuning(const lbknn_index *index);
const char *lbknn_index_error(const lbknn_index *index);
void lbknn_index_destroy(lbknn_index *index);

/* Searches. Collective: every rank passes the same `queries` x dim query
 * rows (each searches a part of its own copy, or rank 0's all, as the
 * partition goes; every rank checks its copy) and gets every result.
 * 1 <= k <= knn.k. The library searches in batches of its choosing.
 *
 * Typed queries: each call that takes query rows has a _typed twin that
 * takes them as `type` values: FLOAT32 or the type the index was built
 * with (lbknn_index_build_typed; another is LBKNN_ERR_USAGE). They are
 * widened to float32 on the host (exactly, 4 bytes a value for the call)
 * and searched as such, so the answers are those of the float32 rows of
 * the same values. On an index that keeps uint8 or int8 points, float32
 * query values must be integers within the type's range (0..255,
 * -128..127; else LBKNN_ERR_INPUT naming the value), as `lbknn run`'s
 * queries must. The untyped calls are the twins with FLOAT32. */

/* The k nearest reference points of each query, nearest first in the
 * exact (key, id) order of docs/design.md §2 (the largest dot product
 * first for ip): ids[q * k + j] (int64 global ids; -1 where the reference set has
 * fewer than k points) and distances[q * k + j] (float32: Euclidean for
 * l2, the sum for l1, the maximum for linf, 1 - cos for cosine, the dot
 * product for ip; +inf where ids is -1). Either array may be NULL. */
lbknn_status lbknn_index_search(lbknn_index *index, int64_t queries, const float *points, int k,
                                int64_t *ids, float *distances);
lbknn_status lbknn_index_search_typed(lbknn_index *index, int64_t queries, lbknn_dtype type,
                                      const void *points, int k, int64_t *ids, float *distances);

/* The self search: the k nearest other reference points of each reference
 * point (the kNN graph of the index's own points, each point itself left
 * out by id, scikit-learn's kneighbors(X=None)), in the (key, id) order of
 * lbknn_index_search. Collective; no query rows travel: every rank gets
 * the rows of the points it passed to lbknn_index_build, in global order
 * (under mpi.partition = replicate every row; an index from
 * lbknn_index_load: rank r rows [r * rows / P, (r + 1) * rows / P)), so
 * ids and distances hold its rows x k entries. Where more than k exact
 * duplicates of a point have lower ids, the point is not among its k + 1
 * nearest and the list is the first k of them. 1 <= k <= knn.k - 1 (the
 * index's lists hold the point itself too) and k < the index's rows.
 * Byte-identical to `lbknn run` with task: graph. Either array may be
 * NULL. */
lbknn_status lbknn_index_search_self(lbknn_index *index, int k, int64_t *ids, float *distances);

/* The predicted label of each query (-1 when no neighbour votes) and,
 * unless probabilities is NULL, queries x lbknn_index_classes()
 * probabilities (each class's weight over the total, as scikit-learn's
 * predict_proba; all zero when no neighbour votes). Ties go to the
 * smaller label. `temperature` is for softmax weights only. */
lbknn_status lbknn_index_classify(lbknn_index *index, int64_t queries, const float *points, int k,
                                  lbknn_weights weights, double temperature, int32_t *labels,
                                  double *probabilities);
lbknn_status lbknn_index_classify_typed(lbknn_index *index, int64_t queries, lbknn_dtype type,
                                        const void *points, int k, lbknn_weights weights,
                                        double temperature, int32_t *labels,
                                        double *probabilities);

/* The mean of the neighbours' targets (uniform) or their 1/distance
 * weighted mean (distance; scikit-learn's KNeighborsRegressor rules),
 * summed in neighbour order in float64; NaN where no neighbour exists. */
lbknn_status lbknn_index_regress(lbknn_index *index, int64_t queries, const float *points, int k,
                                 lbknn_weights weights, double *values);
lbknn_status lbknn_index_regress_typed(lbknn_index *index, int64_t queries, lbknn_dtype type,
                                       const void *points, int k, lbknn_weights weights,
                                       double *values);

/* ---- Radius searches (docs/design.md "Radius search"). ----
 * Every reference point within distance r of each query: distance <= r in
 * the distance lbknn_index_search reports (Euclidean for l2, 1 - cos for
 * cosine; for ip, the points whose dot product is >= r), each query's list
 * in the exact (distance, id) order of lbknn_index_search, counts exact.
 * Byte-identical for any rank count, engine and partition, and to `lbknn
 * run` with task: radius / radius_graph. Collective, with
 * lbknn_index_search's rules: every rank passes the same queries (and
 * radii) and gets every result. */
typedef struct {
    /* At most this many neighbours a query (0: no cap). A query with more
     * either fails the call (truncate 0: LBKNN_ERR_INPUT, the message names
     * the query's row and its count) or keeps its first max_neighbors
     * (truncate 1), flagged in lbknn_radius_result_truncated. */
    int64_t max_neighbors;
    int truncate;
    /* 1: counts only, no lists are kept (scikit-learn's return_length):
     * indptr, indices and distances are then NULL. */
    int count_only;
} lbknn_radius_options;

typedef struct lbknn_radius_result lbknn_radius_result;

/* The neighbours of `queries` query rows x dim within `radii[q]` (NULL:
 * `radius` for every query); r must be finite and, but for ip, >= 0.
 * opts NULL: no cap, lists kept. *result is NULL on failure. */
lbknn_status lbknn_index_radius(lbknn_index *index, int64_t queries, const float *points,
                                const float *radii, float radius,
                                const lbknn_radius_options *opts, lbknn_radius_result **result);
lbknn_status lbknn_index_radius_typed(lbknn_index *index, int64_t queries, lbknn_dtype type,
                                      const void *points, const float *radii, float radius,
                                      const lbknn_radius_options *opts,
                                      lbknn_radius_result **result);
/* The radius graph of the index's own points: each point's neighbours
 * other than itself (left out by id, as scikit-learn's
 * radius_neighbors(X=None)). `radii`: one per reference row in global
 * order, the same on every rank (NULL: `radius`). Each rank gets the rows
 * of lbknn_index_search_self: the points it passed, in global order. */
lbknn_status lbknn_index_radius_self(lbknn_index *index, const float *radii, float radius,
                                     const lbknn_radius_options *opts,
                                     lbknn_radius_result **result);
/* The result's CSR arrays, owned by it (valid until lbknn_radius_result_free):
 * row q's neighbours are indices[indptr[q] .. indptr[q + 1]) (int64 global
 * ids) at distances[...] (float32, as lbknn_index_search's); counts[q] is
 * the true count (also when truncated), truncated[q] 1 where the list was
 * cut at max_neighbors. indptr has queries + 1 entries. */
int64_t lbknn_radius_result_queries(const lbknn_radius_result *result);
const int64_t *lbknn_radius_result_indptr(const lbknn_radius_result *result);
const int64_t *lbknn_radius_result_indices(const lbknn_radius_result *result);
const float *lbknn_radius_result_distances(const lbknn_radius_result *result);
const int64_t *lbknn_radius_result_counts(const lbknn_radius_result *result);
const uint8_t *lbknn_radius_result_truncated(const lbknn_radius_result *result);
void lbknn_radius_result_free(lbknn_radius_result *result);

/* Radius classification (scikit-learn's RadiusNeighborsClassifier rules):
 * every reference point within the query's radius (radii[q], or `radius`
 * where radii is NULL; as lbknn_index_radius) votes, with
 * lbknn_index_classify's weights, ties and probabilities. A query with no
 * neighbour within its radius is an outlier: its label is `outlier_label`
 * and its probabilities 1 for that class (all 0 when outlier_label is no
 * class of the index, >= lbknn_index_classes); outlier_label -1: label -1
 * and probabilities all 0, which the caller may refuse (scikit-learn
 * raises). Either output may be NULL. Collective, as lbknn_index_radius;
 * every rank gets every result. Byte-identical to `lbknn run` with task:
 * classify and knn.radius. */
lbknn_status lbknn_index_radius_classify(lbknn_index *index, int64_t queries, const float *points,
                                         const float *radii, float radius, lbknn_weights weights,
                                         double temperature, int32_t outlier_label,
                                         int32_t *labels, double *probabilities);
lbknn_status lbknn_index_radius_classify_typed(lbknn_index *index, int64_t queries,
                                               lbknn_dtype type, const void *points,
                                               const float *radii, float radius,
                                               lbknn_weights weights, double temperature,
                                               int32_t outlier_label, int32_t *labels,
                                               double *probabilities);

/* Radius regression (scikit-learn's RadiusNeighborsRegressor rules): the
 * mean (uniform) or 1/distance-weighted mean (distance) of the targets of
 * every reference point within the query's radius, summed in (distance,
 * id) order in float64; NaN where a query has none, and `*empty` (may be
 * NULL) the number of such queries. Collective, as lbknn_index_radius. */
lbknn_status lbknn_index_radius_regress(lbknn_index *index, int64_t queries, const float *points,
                                        const float *radii, float radius, lbknn_weights weights,
                                        double *values, int64_t *empty);
lbknn_status lbknn_index_radius_regress_typed(lbknn_index *index, int64_t queries,
                                              lbknn_dtype type, const void *points,
                                              const float *radii, float radius,
                                              lbknn_weights weights, double *values,
                                              int64_t *empty);

#ifdef __cplusplus
}
#endif

#endif
