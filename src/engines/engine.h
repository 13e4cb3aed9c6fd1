/* One interface over the two per-shard engines, and the `auto` rule that picks
 * between them. The run driver sees only this; it knows nothing of the job
 * file: the caller fills lbk_engine_params (the app from its job,
 * src/app/engine_params.c; a library or benchmark from its own arguments). */
#ifndef LBK_ENGINE_H
#define LBK_ENGINE_H

#include "dataset.h"
#include "device.h"
#include "enums.h"
#include "kdtree.h"
#include "knn.h"
#include "status.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lbk_engine_state lbk_engine_state;

/* What an engine needs to know, whoever asks. */
typedef struct {
    lbk_engine engine; /* AUTO, KDTREE or BRUTE (the request, before lbk_engine_resolve) */
    int k;
    lbk_metric metric;
    uint64_t memory_budget; /* bytes of device memory; 0 = from the device (half of it) */
    int groups;             /* brute force: bubble groups per query; 0 = default */
    lbk_tree_split split;   /* k-d tree: split rule, sort and post-build check */
    int rotation;           /* k-d tree, round robin: the root's dimension (kdtree.h) */
    lbk_tree_sort sort;
    bool verify;
    const lbk_tuning *tuning; /* the device's kernel parameters (tuning.h); NULL = derived
                                 from the device */
    uint64_t radius_window;   /* radius fill: (key, row) entries on the device at once;
                                 0 = from the memory budget (tests make it small) */
} lbk_engine_params;

/* Resolve params->engine for this data: returns KDTREE or BRUTE and a
 * sentence saying why (static string). `auto` never picks the tree for
 * cosine or ip, or for K above LBK_TREE_K_MAX. */
lbk_engine lbk_engine_resolve(const lbk_engine_params *params, int dim, uint64_t reference_rows,
                              const char **why);

/* `engine`: KDTREE or BRUTE, as resolved. */
lbk_status lbk_engine_create(lbk_device *dev, const lbk_engine_params *params, lbk_engine engine,
                             const lbk_dataset *reference, lbk_engine_state **out);
/* A built engine as host arrays, for a saved index: the k-d tree's
 * (kdtree.h). The brute engine has none: what it holds is the shard laid
 * out for its kernel (brute_layout.h), one pass over the rows that create
 * redoes, so a saved brute index is its shard. */
typedef struct {
    bool has_tree;
    lbk_kdtree_image tree;
} lbk_engine_image;

/* The built engine's image (arrays allocated here, lbk_engine_image_free). */
lbk_status lbk_engine_export(const lbk_engine_state *state, lbk_engine_image *image);
void lbk_engine_image_free(lbk_engine_image *image);
/* lbk_engine_create from an image (borrowed) instead of building: the
 * k-d tree's buffers are uploaded, the brute engine is created from
 * `reference` as always. Queries answer exactly as the exported engine's. */
lbk_status lbk_engine_create_from(lbk_device *dev, const lbk_engine_params *params,
                                  lbk_engine engine, const lbk_dataset *reference,
                                  const lbk_engine_image *image, lbk_engine_state **out);
uint64_t lbk_engine_max_batch(const lbk_engine_state *state);
/* Whether the engine's result keys are exact integer keys, coded (brute
 * force over uint8 or int8 points: lbk_brute_int_keys); their (code, id)
 * order is the exact (key, id) order, so lists merge as any others, and a
 * final list becomes float32 keys through lbk_engine_int_keys_decode: each
 * the float32 rounding of its exact key (IP's zero -0), pads unchanged. */
bool lbk_engine_int_keys(const lbk_engine_state *state);
/* Whether brute force would search a float32 shard of this shape on `dev`
 * faster than a compact one of `type`: where the float32 prefilter applies
 * (lbk_brute_prefilter_auto) and, for uint8 and int8, the integer cascade
 * does not (lbk_brute_icascade_auto). */
bool lbk_engine_float32_faster(const lbk_device *dev, lbk_dtype type, lbk_metric metric, int k,
                               int dim);
/* The same for a float16 shard (lbk_brute_cascade_auto): float16 takes the
 * prefilter, not the cascade. */
bool lbk_engine_float16_slower(const lbk_device *dev, lbk_metric metric, int k, int dim);
void lbk_engine_int_keys_decode(lbk_metric metric, lbk_knn_candidate *list, uint64_t n);
/* Why `engine` (under the spatial partition where `spatial`) cannot search
 * compact points of `type` in `dim` dimensions (one line, for "widened to
 * float32: why"), or NULL when it keeps them at their own width. For uint8
 * and int8, the k-d tree's keys and the spatial partition's box keys are
 * float32 sums, exact integers only up to LBK_KDTREE_INT_DIM_MAX
 * dimensions. */
const char *lbk_engine_compact_why(lbk_engine engine, bool spatial, lbk_dtype type, int dim);
/* `bounds` (NULL: none): per query, a key no answer needs to exceed (the
 * k-d tree returns only keys <= it, ties included, and pads; brute force
 * ignores it and returns the whole K-list). Either way merging the answer
 * with a list of K candidates within the bound gives the exact K best.
 * `in_order`: the queries come in spatial order already (a self search's
 * points in Morton order), so the k-d tree walks them as given instead of
 * sorting them; the answers do not depend on it. */
lbk_status lbk_engine_query(lbk_engine_state *state, const float *queries, const float *bounds,
                            bool in_order, uint64_t nq, lbk_knn_result *result);
/* ---- radius search (radius.h): every shard row whose key is <= a bound ----
 * `bounds[q]` is query q's bound as a key (lbk_radius_key_bound of its
 * radius). The k-d tree answers l2, l1 and linf; brute force every metric.
 * Both calls add their work to lbk_engine_work, deterministically (the
 * fill: once per query with rows, whatever its windows). Their device
 * buffers live for the call only and are not in
 * lbk_engine_peak_device_bytes. */

/* counts[q] = the number of shard rows whose key to query q is <= bounds[q]. */
lbk_status lbk_engine_radius_count(lbk_engine_state *state, const float *queries,
                                   const float *bounds, uint64_t nq, uint64_t *counts);
/* The rows the count call with the same arguments counted: `offsets` has
 * nq + 1 entries, offsets[0] == 0 and offsets[q + 1] - offsets[q] ==
 * counts[q]; query q's rows (within the shard) and keys are written to
 * [offsets[q], offsets[q + 1]) of `rows` and `keys`, sorted by (key, row).
 * Device memory does not grow with the results beyond a window that fits
 * the budget (lbk_engine_params.radius_window): the call splits its output
 * into as many windows as it needs. */
lbk_status lbk_engine_radius_fill(lbk_engine_state *state, const float *queries,
                                  const float *bounds, uint64_t nq, const uint64_t *offsets,
                                  float *keys, uint32_t *rows);
/* The most queries one radius call sends to the device at once: a caller
 * that splits its queries at it holds no more (larger calls are split
 * inside, with the same answers). */
uint64_t lbk_engine_radius_max_batch(const lbk_engine_state *state);

/* The work of every query call so far, counted where it happens: the
 * tree's kernel per query, the brute engine per path (lbk_brute_timing).
 * Deterministic: the same for the same shard and queries on any device,
 * work-group size or thread count. */
typedef struct {
    uint64_t distance_evals; /* point-query keys (brute force: or bounds) computed */
    uint64_t nodes_visited;  /* k-d tree nodes entered, a bucket as one; 0 for brute force */
} lbk_engine_work;
void lbk_engine_work_of(const lbk_engine_state *state, lbk_engine_work *work);

/* Peak device bytes: the tree's build peak, or the built tree plus the
 * buffers of a query call of `largest_query` queries, whichever is larger;
 * brute force: the most its buffers held at once (lbk_brute_peak_device_bytes);
 * 0 before a build or for an empty shard. */
uint64_t lbk_engine_peak_device_bytes(const lbk_engine_state *state, uint64_t largest_query);
/* The device bytes the reference points take, at their width: brute
 * force's rows buffer (lbk_brute_reference_bytes), the k-d tree's held
 * arrays (points, ids, splits, bucket copy); 0 before a build. */
uint64_t lbk_engine_reference_bytes(const lbk_engine_state *state);
/* Extra lines for the report, e.g. tree peak memory; may be empty. */
void lbk_engine_describe(const lbk_engine_state *state, char *buf, size_t size);
void lbk_engine_destroy(lbk_engine_state *state);

lbk_status lbk_engine_result_alloc(lbk_knn_result *result, uint64_t queries, int k);
void lbk_engine_result_free(lbk_knn_result *result);

#endif
