/* The brute-force engine of PBKNN (He et al. 2016): a distance kernel,
 * grouped parallel-bubble selection (G groups per query, K bubbles each,
 * with a threshold filter in front of the pipeline), and a final selection of
 * K out of G*K; for large K a sort-merge selection (threshold filter, bitonic
 * sort of the survivors, merge into a sorted K-list) replaces the bubble. For
 * L2, cosine and ip an exact prefilter (dot-product bounds, exact re-rank)
 * replaces the direct distance kernel where it applies. Results are
 * byte-identical on every path (src/core/knn.h); bench/results/brute.md and
 * bench/results/embeddings.md have the measurements and design notes. A
 * baseline selection (the benchmarks' CUKNN-style full sort) can replace the
 * bubble through brute_select.h. */
#ifndef LBK_BRUTE_H
#define LBK_BRUTE_H

#include "dataset.h"
#include "device.h"
#include "enums.h"
#include "knn.h"
#include "status.h"
#include "tuning.h"

typedef struct lbk_brute lbk_brute;
typedef struct lbk_brute_selector lbk_brute_selector; /* brute_select.h */

/* Largest K the engine supports (not a device limit: bubble chains longer
 * than a work-group are split into several bubbles per work-item, and the
 * sort-merge keeps its lists in global memory). */
#define LBK_BRUTE_K_MAX LBK_K_MAX

/* Distance kernel: AUTO picks BLOCKED on CPU devices and TILED elsewhere. */
typedef enum {
    LBK_DISTANCE_AUTO = 0,
    LBK_DISTANCE_TILED,  /* local-memory tiles of queries and references (GPUs) */
    LBK_DISTANCE_BLOCKED /* 16-reference vector lanes, no local memory (CPUs) */
} lbk_brute_distance;

/* Prefilter (exact): lower bounds of the keys from dot products (fused
 * multiply-adds: three times fewer operations than L2's direct differences,
 * two times fewer than the exact inner product's separate multiply and add)
 * with a rigorous rounding-error bound select K' > K candidates; their exact
 * keys decide, and a query whose bound cannot prove the candidates complete
 * is recomputed on the exact path. The bounds and the K' selection run on
 * the device, the re-rank on the host (it reads any candidate's row, so a
 * streamed shard is served too). AUTO: on for L2, cosine and ip with the
 * blocked distance kernel, K <= 64 and dimension >= 16; for L2 on a CPU
 * device with dimension >= 64, K < 64 and a resident shard, the cascade
 * (cascade.h: bounds from group sums first, then the full bound and exact
 * keys on the device) runs in front of it where a sample of the shard shows
 * that the group sums keep most of the distances. */
typedef enum {
    LBK_PREFILTER_AUTO = 0,
    LBK_PREFILTER_OFF,
    LBK_PREFILTER_ON,     /* as AUTO without the dimension condition, no cascade (tests) */
    LBK_PREFILTER_CASCADE /* as ON, with the cascade wherever it can run, whatever the
                                data (tests) */
} lbk_brute_prefilter;

/* Selection: AUTO is the bubble below K = 64 (BRUTE_SORT_K_MIN in brute_core.c)
 * and the sort-merge from there on; the others force one (tests, benchmarks). */
typedef enum {
    LBK_SELECTION_AUTO = 0,
    LBK_SELECTION_BUBBLE,
    LBK_SELECTION_SORT_MERGE
} lbk_brute_selection;

typedef struct {
    int k;
    lbk_metric metric;
    int groups;                         /* 0 = default */
    const lbk_brute_selector *selector; /* NULL = the bubble selection; else a baseline's
                                           (brute_select.h), owned by the engine */
    uint64_t memory_budget;             /* bytes of device memory the engine may use; 0 = half the
                                device's global memory. A shard that does not fit half the
                                budget is kept on the host and streamed chunk by chunk. */
    lbk_brute_distance distance;
    lbk_brute_prefilter prefilter;
    int work_group_limit; /* cap on selection work-groups; 0 = the device's limit. Tests
                                use small values to run several bubbles per work-item. */
    lbk_brute_selection selection;
    const lbk_tuning *tuning; /* kernel parameters (tuning.h); NULL = derived from the device */
    bool copy_shard;          /* copy the shard into its buffer even where a CPU device could
                                use it in place (Oclgrind: its checker does not see the
                                contents of a buffer over host memory as written) */
} lbk_brute_params;

/* Upload the reference shard (may be empty: then every result slot is a pad).
 * Its points may be float32 or compact (dataset.h): float16 is searched as
 * float32 (vload_half), with the prefilter, cosine's rows as given
 * (normalised on the fly, bit for bit as lbk_normalize_rows would:
 * brute_scale.h); uint8 and int8 with exact integer keys, which the
 * results hold coded (lbk_brute_int_keys) up to dimension
 * LBK_INT_KEY_DIM_MAX (beyond: LBK_ERR_INPUT), by the exact path alone (L2
 * and ip on the blocked kernel: the dot path, exact keys from dot products,
 * unless the prefilter is OFF), and never with cosine (LBK_ERR_CONFIG).
 * With the prefilter the engine keeps reference->points (float16:
 * reference->raw) for its host re-rank: the caller keeps them, unchanged,
 * until lbk_brute_destroy. */
lbk_status lbk_brute_create(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_brute_params *params, lbk_brute **out);

/* Whether the result keys are integer key codes (uint8 and int8 points,
 * lbk_int_key_code in kernels/lbk_shared.h): their order is the exact
 * keys', and lbk_knn_int_keys_decode turns a final list's codes into the
 * float32 keys. Queries must then hold integers within the points' range
 * (else LBK_ERR_INPUT, one line). */
bool lbk_brute_int_keys(const lbk_brute *engine);

/* Whether a float32 shard of this shape on this device gets the prefilter
 * (and may get the cascade) by default: compact shards are then slower on
 * a CPU (Fashion-MNIST: the per-pair kernel about 3x, the uint8 dot path
 * about 2x the CPU seconds; bench/RESULTS.md runs AH, AJ), so
 * `reference.type: auto` widens there, but for uint8 and int8 where the
 * integer cascade applies (lbk_brute_icascade_auto). */
bool lbk_brute_prefilter_auto(const lbk_device *dev, lbk_metric metric, int k, int dim);
/* Whether such a float32 shard may get the L2 cascade by default, which
 * float16 shards do not take (they take the prefilter). */
bool lbk_brute_cascade_auto(const lbk_device *dev, lbk_metric metric, int k, int dim);
/* Whether the integer cascade would search a uint8 or int8 shard of this
 * shape on `dev` (l2, K < 64, dimension 64 .. 8192, a CPU device; the data
 * and the memory plan may still decline it): there a compact shard is no
 * slower than the float32 path (bench/RESULTS.md, run AK). */
bool lbk_brute_icascade_auto(const lbk_device *dev, lbk_dtype type, lbk_metric metric, int k,
                             int dim);

/* Largest query batch that fits the memory budget. */
uint64_t lbk_brute_max_batch(const lbk_brute *engine);

/* Reference rows per distance matrix (the whole shard unless the memory
 * budget forces chunks); for tests and reports. */
uint64_t lbk_brute_chunk_rows(const lbk_brute *engine);

/* The most device bytes the engine's buffers held at once: the shard (or
 * its chunk), the norms, the cascade's coarse shard, each batch's queries,
 * distance matrix, selection scratch and K-lists (on a CPU device the
 * shard's buffer may be host memory used in place; it counts all the
 * same). */
uint64_t lbk_brute_peak_device_bytes(const lbk_brute *engine);
/* The device bytes of the reference rows' buffer at their width (the whole
 * shard, laid out, where it is resident; else one chunk of it). */
uint64_t lbk_brute_reference_bytes(const lbk_brute *engine);

/* Any nq: batches larger than the max batch are split internally. `result`
 * is allocated by the caller (queries >= nq, k = params.k). */
lbk_status lbk_brute_query(lbk_brute *engine, const float *queries, uint64_t nq,
                           lbk_knn_result *result);

/* Kernel-only timings of the last query call, in seconds (benchmarks). */
typedef struct {
    double distance_s;         /* distance (or prefilter bound) kernels */
    double select_s;           /* grouped bubble (or a selector's) kernels */
    double final_s;            /* final K-of-G*K kernels (and the prefilter's host re-rank) */
    uint64_t fallback_queries; /* prefiltered queries that needed the exact path */
    uint64_t prefiltered_queries;
    uint64_t cascade_queries;          /* queries the cascade took */
    uint64_t cascade_fallback_queries; /* of them, those sent down the prefilter path */
    uint64_t cascade_checked_rows;     /* exact keys the cascade computed for the others */
    uint64_t distance_evals; /* rows x queries of every path a batch went through: a query a
                                path hands down is counted again on the next */
} lbk_brute_timing;
void lbk_brute_last_timing(const lbk_brute *engine, lbk_brute_timing *timing);
/* sum += t, field by field (totals over calls). */
void lbk_brute_timing_add(lbk_brute_timing *sum, const lbk_brute_timing *t);

/* Radius search (engine.h, lbk_engine_radius_*) over the shard, resident
 * or streamed, for every metric: counts, and the lists in row order (the
 * engine sorts them), through a device window of `window` (key, row)
 * entries at a time. `evals` gets the keys computed added: the count's
 * every pair, the fill's every row for each query with rows, whatever the
 * window. */
uint64_t lbk_brute_radius_max_batch(const lbk_brute *engine);
lbk_status lbk_brute_radius_count(lbk_brute *engine, const float *queries, const float *bounds,
                                  uint64_t nq, uint64_t *counts, uint64_t *evals);
lbk_status lbk_brute_radius_fill(lbk_brute *engine, const float *queries, const float *bounds,
                                 uint64_t nq, const uint64_t *offsets, uint64_t window,
                                 float *keys, uint32_t *rows, uint64_t *evals);

void lbk_brute_destroy(lbk_brute *engine);

#endif
