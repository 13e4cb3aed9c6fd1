/* The brute-force engine's insides, shared by its files and no one else:
 * brute.c (plan, kernels, the exact and prefilter paths, the public API)
 * and brute_cascade.c (the L2 cascade's set-up and path). */
#ifndef LBK_BRUTE_IMPL_H
#define LBK_BRUTE_IMPL_H

#include "brute.h"
#include "brute_select.h"
#include "device_cl.h"
#include "rerank.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    cl_event event;
    lbk_brute_event kind;
} lbk_brute_timed_event;

/* A batch's worth of queries (x dim) and their K-lists, for the queries one
 * path hands to another. */
typedef struct {
    float *queries;
    float *keys;
    uint32_t *index;
} lbk_brute_slots;

struct lbk_brute {
    lbk_device *dev;
    int k;
    lbk_metric metric;
    bool has_selector;       /* a baseline's selection replaces the bubble (brute_select.h) */
    bool sort_select;        /* large K: brute_sort.cl's sort-merge replaces the bubble */
    uint32_t kp2;            /* sort-merge: the power of two >= K of its lists */
    lbk_brute_selector selector;
    int dim;
    uint64_t n;
    bool resident;           /* whole shard on the device; else chunks uploaded per batch */
    bool blocked;            /* blocked distance kernel and [block][dim][vw] layout */
    lbk_tuning tuning;       /* the device's kernel parameters */
    uint32_t vw;             /* blocked kernel: lanes, the layout's rows per block */
    uint32_t vrows;          /* references per work-item: vw x block_vectors */
    float *host_refs;        /* the shard in the device layout: streamed, or used in place */
    uint64_t chunk;          /* reference rows per distance matrix */
    size_t ldd;              /* distance matrix row stride */
    uint32_t groups;         /* bubble groups per query (before clamping to a chunk) */
    bool auto_groups;        /* groups chosen per batch from the compute units */
    uint32_t bubble_w;       /* work-items of the bubble kernels */
    uint64_t batch;
    cl_kernel k_dist, k_groups, k_final;
    cl_mem refs, queries, dist, surv_k, surv_i, best_k, best_i;
    cl_mem scr_k, scr_i;     /* sort-merge: 2 * kp2 slots per work-group */
    /* Prefilter (see brute.h): K' = kp candidates by lower bound. */
    bool prefilter;
    int kp;
    uint32_t bubble_wp;
    float bound_c;
    cl_kernel k_bound, k_groups_p, k_final_p;
    cl_mem qnorm, rnorm, bestp_k, bestp_i;
    /* Cascade (cascade.h): bounds from coarse rows of dc dimensions, exact
     * keys of the rows they leave on the device (lbk_cascade_exact). */
    bool cascade;
    bool cascade_off;        /* set after a batch where most queries needed the prefilter */
    bool cascade_probed;     /* the first (short) cascade batch has run */
    bool cascade_forced;     /* LBK_PREFILTER_CASCADE: whatever the data */
    uint64_t cascade_seen, cascade_capped; /* queries through it, and of them capped */
    int dc;
    float cascade_c;         /* the bound's constant for dc dimensions */
    float cascade_slope;
    double largest_rnorm;    /* max |r|^2 over the shard */
    uint32_t max_checks;
    cl_kernel k_cascade;
    cl_mem refs_c, rnorm_c, queries_c, qnorm_c, qeps, rows, checks;
    int *group_of;           /* each dimension's group (lbk_cascade_grouping) */
    float *host_refs_c;      /* the coarse shard in the blocked layout (CPU: in use) */
    float *host_qc, *host_qnorm_c, *host_qeps; /* batch */
    uint32_t *host_checks;    /* batch: exact keys each query needed */
    uint8_t *cas_flags;      /* batch: 1 = the query goes down the prefilter path */
    lbk_brute_slots cas;         /* those queries */
    lbk_rerank rerank;       /* the host half: settle proofs, exact re-rank */
    float *host_rnorm;       /* n: the bound's norm of every shard row */
    float *host_qnorm;       /* batch */
    float *cand_k;           /* batch x K': the candidates read back */
    uint32_t *cand_i;
    uint8_t *host_flags;     /* batch: 1 = the query needs the exact path */
    lbk_brute_slots fb;          /* the queries sent back to the exact path */
    lbk_brute_timed_event *events;
    size_t event_count, event_cap;
    lbk_brute_timing timing;
};

/* A way through the engine for a batch: exact, prefilter or cascade. */
typedef lbk_status (*lbk_brute_path)(lbk_brute *e, const float *queries, uint64_t nq,
                                     float *keys, uint32_t *index);

/* brute.c, for the cascade: the blocked layout's padded rows, per-batch
 * query slots, the bound's norms (false: too large, take the exact path),
 * the profiled events, the blocked kernels' tile and launch, the K best
 * read back, the exact and prefilter paths, and the hand-off of flagged
 * queries to another path (their results put in place, *count of them). */
size_t lbk_brute_padded_rows(const lbk_brute *e, uint64_t rows);
lbk_status lbk_brute_alloc_slots(lbk_brute *e, lbk_brute_slots *slots, const char *what);
bool lbk_brute_norms(const lbk_brute *e, const float *x, size_t rows, size_t dim, float *out);
void lbk_brute_collect_events(lbk_brute *e);
cl_uint lbk_brute_blocked_tile(const lbk_brute *e, cl_uint nb, cl_uint nr);
lbk_status lbk_brute_blocked_launch(lbk_brute *e, cl_kernel kernel, cl_uint nb, cl_uint nr,
                                    cl_uint qt);
/* The bound kernel (lbk_brute_bound_blocked) over nb queries x nr rows:
 * the full rows (prefilter) or the coarse ones (cascade), with their norms
 * and the bound's constant; block_first and norm_first place a chunk. */
typedef struct {
    cl_mem queries, qnorm, refs, rnorm;
    cl_uint dim;
    cl_float c;
} lbk_brute_bound_rows;
lbk_status lbk_brute_bound(lbk_brute *e, const lbk_brute_bound_rows *rows, cl_uint nb,
                           cl_uint nr, cl_ulong block_first, cl_ulong norm_first);
lbk_status lbk_brute_read_best(lbk_brute *e, uint64_t nq, float *keys, uint32_t *index,
                               cl_bool blocking);
lbk_status lbk_brute_run_exact(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                               uint32_t *index);
lbk_status lbk_brute_run_prefilter(lbk_brute *e, const float *queries, uint64_t nq,
                                   float *keys, uint32_t *index);
lbk_status lbk_brute_rerun_flagged(lbk_brute *e, lbk_brute_path path, const uint8_t *flags,
                                   const lbk_brute_slots *slots, const float *queries,
                                   uint64_t nq, float *keys, uint32_t *index, uint64_t *count);

/* brute_cascade.c: its batch buffers on the host; its groups and coarse
 * shard (e->cascade cleared when the data does not suit it); a batch
 * through it, the queries it caps handed to the prefilter path. */
lbk_status lbk_brute_cascade_alloc(lbk_brute *e);
lbk_status lbk_brute_cascade_upload(lbk_brute *e, const float *points, bool copy_shard);
lbk_status lbk_brute_cascade_run(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                                 uint32_t *index);

#endif
