/* The distributed index: every rank's reference points on its device, the
 * partition that spreads them (row shards, replicas, or the spatial boxes),
 * and the search of a query set in batches across the ranks. The one search
 * path of lbknn: `lbknn run` (src/app) and the library (src/api, lbknn.h)
 * are its two clients, and differ only in where the queries come from and
 * where the final K-lists go (the sink). */
#ifndef LBK_INDEX_H
#define LBK_INDEX_H

#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "enums.h"
#include "knn.h"
#include "status.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdint.h>

/* X(constant, name in the summary and report): the phases a rank's time is
 * split into; the index times build to output, its client the rest. */
#define LBK_INDEX_PHASE_LIST(X)                                                                  \
    X(LBK_PHASE_READ, "read")             /* reading the shard (and, on rank 0, the queries) */  \
    X(LBK_PHASE_DEVICE, "device")         /* opening the OpenCL device */                        \
    X(LBK_PHASE_BUILD, "build")           /* uploading the shard / building the tree */          \
    X(LBK_PHASE_DISTRIBUTE, "distribute") /* broadcasting query batches */                       \
    X(LBK_PHASE_QUERY, "query")           /* per-shard top-K on the device */                    \
    X(LBK_PHASE_MERGE, "merge")           /* the MPI K-list reduction */                         \
    X(LBK_PHASE_OUTPUT, "output")         /* the sink: classification and writing results */

#define LBK_INDEX_PHASE_CONSTANT_(constant, name) constant,
typedef enum { LBK_INDEX_PHASE_LIST(LBK_INDEX_PHASE_CONSTANT_) LBK_PHASE_COUNT } lbk_index_phase;
#undef LBK_INDEX_PHASE_CONSTANT_

/* One rank's work, as every rank tells rank 0 (sent as bytes). Under the
 * spatial partition, queries_phase1 are the queries this rank searched as
 * their home rank and queries_phase2 those it searched for other ranks'
 * bounds (phase 2); otherwise queries_phase1 counts every query it
 * searched. The work counts (distance_evals .. bytes_received) depend only
 * on the data, the job and the rank count: not on the machine, the device's
 * threads or work-groups, or the run. The client fills the two peaks. */
typedef struct {
    uint64_t points; /* reference points this rank searched */
    uint64_t queries_phase1, queries_phase2;
    uint64_t queries_owned;     /* final lists this rank handed to its sink */
    uint64_t owned_phase2;      /* of those, the ones that went to phase 2 */
    uint64_t bytes_sent;        /* query-time bytes sent to other ranks: the spatial
                                  * exchanges' queries and K-lists, or the K-list merge's
                                  * model (merge.h); query broadcasts are not counted */
    uint64_t bytes_received;    /* the same exchanges' bytes from other ranks */
    uint64_t distance_evals;    /* the engine's (lbk_engine_work) */
    uint64_t nodes_visited;     /* the engine's; 0 for brute force */
    uint64_t queries_answered;  /* queries the engine searched: phase1 + phase2 */
    uint64_t peak_rss_bytes;    /* the process's own: VmHWM, else getrusage's ru_maxrss */
    uint64_t peak_rss_vmhwm;    /* 1: peak_rss_bytes is VmHWM; 0: ru_maxrss (no /proc) */
    uint64_t peak_device_bytes; /* the engine's buffers at their peak; 0 = none (no points) */
    uint64_t reference_device_bytes; /* the reference points on the device, at their width
                                      * (lbk_engine_reference_bytes) */
    uint64_t reference_host_bytes;   /* the shard's rows in host memory, at their width */
} lbk_index_rank_stats;

/* The spatial partition's numbers (this rank's until its client reduces
 * them over the ranks). */
typedef struct {
    int levels;                  /* of the top tree */
    double redistribute_s;       /* this rank's decomposition and exchange */
    uint64_t redistribute_bytes; /* this rank's sent bytes */
} lbk_index_spatial_report;

/* What the index reads of the options (the job's keys it uses, and
 * nothing else): `lbknn run` fills it from the job, the library from its
 * options (both through lbk_index_params_from_job). */
typedef struct {
    int k;                   /* knn.k: the K of every K-list, the largest k a search asks */
    lbk_metric metric;       /* knn.metric */
    lbk_engine engine;       /* knn.engine as asked (the plan resolves auto) */
    lbk_tree_split split;    /* tree.split */
    lbk_tree_sort sort;      /* tree.sort */
    bool verify;             /* tree.verify */
    lbk_partition partition; /* mpi.partition as asked (the plan resolves auto) */
    lbk_merge_mode merge;    /* mpi.merge */
    uint64_t batch;          /* device.batch: queries per batch; 0 = from the memory budget */
    int groups;              /* device.groups: bubble groups per query; 0 = the default */
    uint64_t memory_mb;      /* device.memory_mb: the device budget; 0 = from the device */
    bool compact_asked;      /* reference.type named a compact type: the points stay compact
                              * where brute force can search them so, also where the float32
                              * prefilter would be faster (auto widens there) */
    bool radius;             /* the searches are radius searches (brute force's read float32
                              * points: compact ones are widened for it, not for the tree);
                              * set by `lbknn run`, not read from the options */
} lbk_index_params;

/* How the work is spread: the same on every rank, with no communication,
 * from the options, the reference set's shape and the rank count. */
typedef struct {
    lbk_engine engine; /* resolved: KDTREE or BRUTE */
    const char *engine_why;
    lbk_partition partition; /* resolved: never AUTO */
    const char *partition_why;
    bool replicated; /* every rank holds every reference row */
    bool owns_slice; /* each rank holds its own slice of the queries (lbk_index_query_slice);
                      * otherwise rank 0 holds them all */
    bool sliced;     /* every rank's sink gets a slice of each batch; otherwise rank 0's
                      * gets every list */
} lbk_index_plan;

void lbk_index_plan_make(const lbk_index_params *params, int dim, uint64_t reference_rows,
                         int ranks, lbk_index_plan *plan);

/* The query rows [*first, *first + *count) a rank holds when the plan owns
 * slices. */
void lbk_index_query_slice(uint64_t queries, const lbk_comm *comm, uint64_t *first,
                           uint64_t *count);

typedef struct lbk_index lbk_index;

/* Collective. The index over every rank's `shard` (taken: the index frees
 * it; rows with global ids, first_row on), `reference_rows` in all, on
 * `device` (borrowed) with `tuning` (NULL: derived from the device).
 * `params` are copied. `queries`: this rank's slice of the queries to come, by which
 * the spatial partition balances its boxes under mpi.balance: queries
 * (borrowed for the call; NULL on every rank or on none: without it the
 * boxes balance points). *out is set whatever the status (lbk_index_destroy
 * it). */
lbk_status lbk_index_create(const lbk_comm *comm, lbk_device *device, const lbk_tuning *tuning,
                            const lbk_index_params *params, const lbk_index_plan *plan,
                            uint64_t reference_rows, bool reference_labels, lbk_dataset *shard,
                            const lbk_dataset *queries, lbk_index **out);
void lbk_index_destroy(lbk_index *index);

/* Why the plan reads compact points as float32 (brute force's radius
 * search; cosine over the k-d tree or the spatial partition, which read
 * the rows' values as they are; uint8/int8 beyond the tree's exact
 * dimension: lbk_engine_compact_why), or NULL. `radius` as in
 * lbk_index_params. */
const char *lbk_index_plan_compact_why(const lbk_index_plan *plan, lbk_metric metric,
                                       lbk_dtype type, int dim, bool radius);

/* The same for a built index about to serve a radius search. */
const char *lbk_index_compact_why(const lbk_index *index, bool radius);

/* Collective: a compact index's points widened to float32 and its engine
 * built again over them, for a search that reads float32 points (`why`,
 * said once by rank 0; NULL, or points already float32: nothing to do).
 * Every rank's index has the same type (the build agrees on it). */
lbk_status lbk_index_widen(lbk_index *index, const lbk_tuning *tuning, const char *why);
/* The type this rank's points are kept at: FLOAT32, or compact. */
lbk_dtype lbk_index_dtype(const lbk_index *index);

/* A saved index (index_store.c, docs/design.md "A saved index"): each
 * rank's part of a built index in a directory, and a manifest of what it
 * was made for and of every file's size and CRC32 (saved.h). The
 * format version: raised whenever a file's layout changes. An index of
 * float32 points keeps format 1's layout and number (an older lbknn loads
 * it); compact points (uint8, int8, float16 rows at their own width) are
 * format 2. Both load. */
#define LBK_INDEX_SAVED_FORMAT 2
#define LBK_INDEX_SAVED_FORMAT_FLOAT32 1

/* What the client adds to a save: the manifest's note of where the points
 * came from, and (task regress) this rank's targets of the rows
 * [targets_first, targets_first + targets_rows) it looks them up in. */
typedef struct {
    const char *reference;
    bool targets_saved; /* on every rank alike */
    const double *targets;
    uint64_t targets_first, targets_rows;
} lbk_index_save_extra;

/* Collective: the index into the directory `dir` (created if missing; an
 * old manifest removed first, the new one written last by rank 0). */
lbk_status lbk_index_save(const lbk_index *index, const char *dir,
                          const lbk_index_save_extra *extra);

/* Collective: rank 0 reads DIR's manifest, every rank gets its text
 * (*text malloc'ed: free it). */
lbk_status lbk_index_manifest_share(const lbk_comm *comm, const char *dir, char **text);

/* Whether a manifest fits the options: format version, metric, tree.split,
 * and the engine and partition they resolve to for the saved shape on the
 * saved rank count (any rank count loads it). The first item that differs
 * is said in one line naming it: an error, or (`rebuild`) information. */
bool lbk_index_saved_fits(const char *manifest, const char *dir, const lbk_index_params *params,
                          bool rebuild);

/* The type the saved points are stored and searched at (format 1: float32). */
lbk_status lbk_index_saved_type(const char *manifest, const char *dir, lbk_dtype *type);
/* Whether the saved points' type fits reference.type `asked`: AUTO takes
 * any, a named type only its own (float32 included: a compact index is not
 * widened on load, a float32 one not narrowed). A mismatch is one line
 * naming both, as lbk_index_saved_fits says its items. */
bool lbk_index_saved_type_fits(const char *manifest, const char *dir, lbk_dtype asked,
                               bool rebuild);

/* The type the index holds its points at: the shard's after the plan's
 * widening (what a saved index and a checkpoint record). */
lbk_dtype lbk_index_points_type(const lbk_index *index);

/* The saved reference set's shape. */
lbk_status lbk_index_saved_shape(const char *manifest, const char *dir, uint64_t *rows, int *dim,
                                 bool *labels, bool *targets);

/* What lbk_index_create_saved needs beyond the shard: the engine's image
 * and the spatial top tree, as read back (and the targets until taken). */
typedef struct lbk_index_saved lbk_index_saved;

/* This rank's part of a saved index whose manifest fits (checked above):
 * the shard (points, ids, labels when `labels`) into *shard, the rest into
 * *out (set whatever the status: lbk_index_saved_free), with this rank's
 * targets when `targets`. Every file is checked by size and CRC; a bad one
 * is refused by name. On the saved rank count, or for replicas, the parts
 * as saved (not collective); on another, collective: each part is read by
 * one rank and the rows move to the row shards a fresh build on this rank
 * count reads, which lbk_index_create_saved then builds from. */
lbk_status lbk_index_saved_read(const char *dir, const char *manifest, const lbk_comm *comm,
                                const lbk_index_params *params, const lbk_index_plan *plan,
                                int dim, uint64_t reference_rows, bool labels, bool targets,
                                lbk_dataset *shard, lbk_index_saved **out);
/* The targets read (the caller frees them with lbk_alloc_large_free). */
double *lbk_index_saved_take_targets(lbk_index_saved *saved, uint64_t *first, uint64_t *rows);
void lbk_index_saved_free(lbk_index_saved *saved);

/* Collective: lbk_index_create from a saved index's shard (taken) and
 * image (borrowed): no redistribution, no tree build; searches answer
 * exactly as the saved index's did. Read on another rank count, the shard
 * is a fresh build's and this is lbk_index_create (`queries`: as its,
 * for mpi.balance: queries; not read otherwise). */
lbk_status lbk_index_create_saved(const lbk_comm *comm, lbk_device *device,
                                  const lbk_tuning *tuning, const lbk_index_params *params,
                                  const lbk_index_plan *plan, uint64_t reference_rows,
                                  bool reference_labels, lbk_dataset *shard,
                                  const lbk_dataset *queries, lbk_index_saved *saved,
                                  lbk_index **out);

/* Collective: batches and buffers for a search of `query_rows` queries.
 * `batch_cap`: at most this many queries per batch (0: none). */
lbk_status lbk_index_prepare(lbk_index *index, uint64_t query_rows, uint64_t batch_cap);

/* Collective: the same for the self search, whose queries are the index's
 * own reference points, each searched from the rank that holds it: no
 * query set and, under the spatial partition, no routing to a home rank
 * (the owner is the home). lbk_index_search then reads no `points`. Each
 * point finds itself among its lists' candidates: the client drops it (a
 * graph asks the index for K + 1). */
lbk_status lbk_index_prepare_self(lbk_index *index, uint64_t batch_cap);

/* Collective: either of them for a radius search (lbk_index_radius), which
 * holds no K-lists: only the batches' points (the K-lists of an earlier
 * prepare are freed); `row_order`: a self search's batches in row order
 * (lbk_index_radius_params). */
lbk_status lbk_index_prepare_radius(lbk_index *index, bool self, uint64_t query_rows,
                                    bool row_order);

/* What a sink gets: the final K-lists of the queries first + slice_first,
 * ..., first + slice_first + slice_count - 1 of the batch [first, first +
 * count) (query rows of the whole search), in (key, id) order with
 * reference labels (-1 without). */
typedef struct {
    uint64_t first, count;
    uint64_t slice_first, slice_count;
    const lbk_knn_candidate *lists; /* slice_count x k */
    int k;
    /* A spatial index's self search: the batch is of this rank's own points
     * first, ... (rows of `own`), and list q is point first + slice_first +
     * q's, whose global row is lbk_dataset_id(own, first + slice_first +
     * q). NULL: first + slice_first + q is the global row. */
    const lbk_dataset *own;
    /* A self search's batch order (NULL: row order): list q is then of the
     * point order[first + slice_first + q] (a row of `own`, or the global
     * row where own is NULL). */
    const uint32_t *order;
} lbk_index_slice;

typedef struct {
    /* Called on every rank when the plan is sliced (every rank must then
     * join whatever collective step it takes), else on rank 0; its status
     * is agreed over the ranks before the next batch. */
    lbk_status (*emit)(void *user, const lbk_index_slice *slice);
    /* After each batch, on every rank, or NULL. */
    void (*progress)(void *user, uint64_t batch, uint64_t batches);
    void *user;
    /* emit is collective: call it on every rank also where the plan gives
     * rank 0 every list (the others with slice_count 0). */
    bool every_rank;
    /* The first batch to run (a resumed run's: those before are done). */
    uint64_t first_batch;
    /* After each batch, on every rank, or NULL: collective; `done` batches
     * are complete. A status other than LBK_OK (LBK_STOPPED: stop here)
     * ends the search with it; every rank must return the same. */
    lbk_status (*after_batch)(void *user, uint64_t done);
} lbk_index_sink;

/* Collective, after lbk_index_prepare: the queries through the sink.
 * `points`: this rank's slice (plan.owns_slice), or rank 0's every query
 * row (the others' is not read). */
lbk_status lbk_index_search(lbk_index *index, const float *points, const lbk_index_sink *sink);

/* A radius search (radius.c; docs/design.md "Radius search"): every
 * reference point whose key is within the key bound of its query's radius
 * (radius.h), exact counts, lists in (key, id) order. */
typedef struct {
    /* Per query, by its global row (the query set's row, or a self search's
     * reference row), on every rank alike; NULL: `radius` for every query.
     * Valid radii only (lbk_radius_valid): the client checks them. */
    const float *radii;
    float radius;
    uint64_t max_neighbors; /* 0: no cap */
    bool truncate;          /* a list over the cap keeps its first max_neighbors;
                             * otherwise the search fails naming the query */
    bool count_only;        /* counts only: no list is ever filled */
    /* NULL, or the holders' counts kept from one search for the next of
     * the same queries (the CLI's count pass, then its fill): a count-only
     * search appends them (4 bytes a query on each of its holders), a
     * fill search given full ones reads them instead of counting again. */
    struct lbk_index_radius_kept *kept;
    /* A self search's batches in row order, not the Morton order that
     * keeps a batch's points together (lbk_index_prepare_self): a sink that
     * writes each row at its place in a file (the CLI's graph) then gets a
     * round's rows as one run, or few, where Morton order made two writes a
     * row (bench/RESULTS.md, issue 40). The count and fill searches of the
     * same kept counts must agree on it. */
    bool row_order;
} lbk_index_radius_params;

typedef struct lbk_index_radius_kept {
    uint32_t *counts; /* each batch's work rows' counts, batch after batch */
    uint64_t n, cap, at;
    bool full; /* a count-only search wrote them all */
} lbk_index_radius_kept;

void lbk_index_radius_kept_free(lbk_index_radius_kept *kept);

/* What a radius sink gets: the queries first + slice_first, ...,
 * first + slice_first + slice_count - 1 of the batch [first, first + count),
 * rows as in lbk_index_slice (own, order: a self search's). */
typedef struct {
    uint64_t first, count;
    uint64_t slice_first, slice_count;
    const uint64_t *counts; /* slice_count: each query's exact count (self excluded),
                             * also where its list was truncated */
    /* slice_count + 1 offsets from 0 into ids and keys, the lists in
     * (key, id) order, truncated to max_neighbors where asked (a list
     * shorter than its count is a truncated one); NULL when count_only. */
    const uint64_t *indptr;
    const uint64_t *ids; /* global reference rows */
    const float *keys;
    const int32_t *labels; /* their labels, as a K-list's; NULL: the index has none */
    const lbk_dataset *own;
    const uint32_t *order;
} lbk_index_radius_slice;

/* The global row of the slice's query q: the query set's row, or a self
 * search's reference row. */
uint64_t lbk_index_radius_row(const lbk_index_radius_slice *slice, uint64_t q);

#define LBK_INDEX_RADIUS_SINK_BYTES 24u

typedef struct {
    /* Called on every rank the same number of times (an empty slice where
     * the rank holds none of the lists), so it may be collective; its
     * status is agreed before the next step. A batch's lists come in
     * several slices, in query order, each within the memory budget, of
     * which the sink may use LBK_INDEX_RADIUS_SINK_BYTES an entry for a
     * copy of its own (the CLI's write buffer and its rows' order). */
    lbk_status (*emit)(void *user, const lbk_index_radius_slice *slice);
    /* After each batch, on every rank, or NULL. */
    void (*progress)(void *user, uint64_t batch, uint64_t batches);
    void *user;
} lbk_index_radius_sink;

/* Collective: a radius search of `query_rows` queries (`points`: as
 * lbk_index_search's), or (`self`) of the index's own points, each one
 * left out of its own list by id. Plans its own batches (no
 * lbk_index_prepare needed); the results go to the sink slice by slice,
 * and no rank holds more than about the memory budget of them
 * (device.memory_mb, else 256 MiB) at once. */
lbk_status lbk_index_radius(lbk_index *index, bool self, uint64_t query_rows, const float *points,
                            const lbk_index_radius_params *params,
                            const lbk_index_radius_sink *sink);

/* For the client's report. */
typedef struct {
    double phase[LBK_PHASE_COUNT]; /* this rank's seconds (build .. output) */
    uint64_t batch, batches;       /* of the last lbk_index_prepare */
    double search_s;               /* wall time of the last search's batch loop */
    uint64_t merge_bytes;          /* this rank's */
    uint64_t largest_search;       /* most queries in one engine call */
    lbk_index_rank_stats stats;
    const lbk_index_spatial_report *spatial; /* NULL unless the partition is spatial */
} lbk_index_info;

const lbk_index_info *lbk_index_info_of(const lbk_index *index);
/* Extra lines for the report (the engine's own), may be empty; its peak
 * device bytes. */
void lbk_index_describe(const lbk_index *index, char *buf, size_t size);
uint64_t lbk_index_peak_device_bytes(const lbk_index *index);
/* This rank's reference points' bytes at their width: on the device (the
 * engine's) and the shard's rows on the host. */
void lbk_index_reference_bytes(const lbk_index *index, uint64_t *device, uint64_t *host);

#endif
