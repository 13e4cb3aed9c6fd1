/* The brute-force engine's core, private to its files (docs/design.md,
 * section 8): the engine's struct, the memory plan, the shard on the
 * device, the bound's norms, programs and kernels, profiled launches and
 * the selection. brute.c walks each batch down a table of paths - cascade
 * (brute_cascade.c), prefilter (brute_prefilter.c), exact (brute_exact.c) -
 * each of which owns its part of the engine, creates and destroys it, and
 * calls only this core and the paths below it. */
#ifndef LBK_BRUTE_CORE_IMPL_H
#define LBK_BRUTE_CORE_IMPL_H

#include "brute.h"
#include "brute_select.h"
#include "device_cl.h"
#include "tuning.h"

#include <stdbool.h>
#include <stdint.h>

/* Distance tile of the tiled kernel: LX x LY work-items, each RB references
 * x QB queries, TD dimensions staged at a time. LX is the direction PoCL
 * vectorises. */
#define LBK_BRUTE_DIST_LX 16
#define LBK_BRUTE_DIST_LY 8
#define LBK_BRUTE_DIST_RB 2
#define LBK_BRUTE_DIST_QB 4
#define LBK_BRUTE_DIST_TD 32
#define LBK_BRUTE_DIST_TR (LBK_BRUTE_DIST_LX * LBK_BRUTE_DIST_RB)
#define LBK_BRUTE_DIST_TQ (LBK_BRUTE_DIST_LY * LBK_BRUTE_DIST_QB)

/* The rows of brute.c's path table. */
#define LBK_BRUTE_PATHS 4

typedef struct lbk_brute_exact_state lbk_brute_exact_state;         /* brute_exact.c */
typedef struct lbk_brute_prefilter_state lbk_brute_prefilter_state; /* brute_prefilter.c */
typedef struct lbk_brute_cascade_state lbk_brute_cascade_state;     /* brute_cascade.c */
typedef struct lbk_brute_icascade_state lbk_brute_icascade_state;   /* brute_icascade.c */

typedef struct {
    cl_event event;
    lbk_brute_event kind;
} lbk_brute_timed_event;

/* A path's hand-down buffers (brute.c): a batch's flags, and room for the
 * queries (x dim) it flags and their K-lists. */
typedef struct {
    uint8_t *flags;
    float *queries;
    float *keys;
    uint32_t *index;
} lbk_brute_slots;

struct lbk_brute {
    lbk_device *dev;
    int k;
    lbk_metric metric;
    int dim;
    uint64_t n;
    lbk_dtype dtype;   /* the shard's points (dataset.h): float32, or compact */
    size_t ref_bytes;  /* bytes of one reference value on the device (4, 2 or 1) */
    bool int_keys;     /* uint8 and int8: exact integer keys, coded (lbk_int_key_code) */
    lbk_tuning tuning; /* the device's kernel parameters */
    uint32_t vw;       /* blocked kernel: lanes, the layout's rows per block */
    uint32_t vrows;    /* references per work-item: vw x block_vectors */
    bool blocked;      /* blocked distance kernel and [block][dim][vw] layout */
    /* Selection. */
    bool has_selector; /* a baseline's selection replaces the bubble (brute_select.h) */
    lbk_brute_selector selector;
    bool sort_select; /* large K: brute_sort.cl's sort-merge replaces the bubble */
    uint32_t kp2;     /* sort-merge: the power of two >= K of its lists */
    uint32_t groups;  /* bubble groups per query (before clamping to a chunk) */
    bool auto_groups; /* groups chosen per batch from the compute units */
    /* The plan. */
    bool resident;  /* whole shard on the device; else chunks uploaded per batch */
    uint64_t chunk; /* reference rows per distance matrix */
    size_t ldd;     /* distance matrix row stride */
    uint64_t batch;
    /* The shard and a batch's buffers, shared by the paths. */
    void *host_refs; /* the shard in the device layout: streamed, or used in place */
    cl_mem refs, queries, dist, surv_k, surv_i, best_k, best_i;
    cl_mem scr_k, scr_i; /* sort-merge: 2 * kp2 slots per work-group */
    /* The bound's norms (lbk_brute_norms), for the prefilter and the cascade. */
    float *host_rnorm; /* padded rows: every shard row's */
    float *host_qnorm; /* batch */
    cl_mem rnorm, qnorm;
    /* Cosine over float16 (brute_scale.h): each row's factors, else NULL. */
    bool scaled;
    float *host_rscale;
    cl_mem rscale;
    /* The paths' own parts (NULL: the path is off) and their hand-down buffers. */
    lbk_brute_exact_state *exact;
    lbk_brute_prefilter_state *prefilter;
    lbk_brute_cascade_state *cascade;
    lbk_brute_icascade_state *icascade; /* uint8, int8 */
    lbk_brute_slots down[LBK_BRUTE_PATHS];
    lbk_brute_timed_event *events;
    size_t event_count, event_cap;
    lbk_brute_timing timing;
    /* Device bytes of the buffers held now and at most (the report's
     * peak_device_bytes): every buffer goes through lbk_brute_device_buffer
     * and lbk_brute_release, so a part dropped after its upload (the
     * cascade) counts until it is gone. */
    uint64_t device_bytes, device_peak;
    uint64_t refs_bytes; /* the reference rows' buffer: the shard, or its chunk */
};

/* A batch as a path gets it: nq query rows, and where their K-lists go. */
typedef struct {
    const float *queries;
    uint64_t nq;
    float *keys;
    uint32_t *index;
} lbk_brute_batch;

/* What a path leaves for the paths below it: flags[q] set for each query it
 * could not settle (count of them), or `declined`: it took none of the
 * batch (its norms are too large for the bounds), which goes on whole. */
typedef struct {
    uint8_t *flags;
    uint64_t count;
    bool declined;
} lbk_brute_handoff;

/* One row of the path table. applies: the path takes batches (now: the
 * cascade turns itself off). batch_limit (NULL: none): how many of the next
 * n queries it takes as its batch, at most n. run: the K-lists of the
 * queries it settles, the others handed down. */
typedef struct {
    const char *name;
    bool (*applies)(const lbk_brute *e);
    uint64_t (*batch_limit)(lbk_brute *e, uint64_t n);
    lbk_status (*run)(lbk_brute *e, const lbk_brute_batch *b, lbk_brute_handoff *down);
} lbk_brute_path;

/* What the paths on add to the memory plan: device bytes per query of a
 * batch and per resident shard row, and the longest bubble chain, which
 * sizes the survivors (K, or the prefilter's K'). */
typedef struct {
    uint64_t query_bytes;
    uint64_t row_bytes;
    int chain;
} lbk_brute_needs;

/* The work-group sizes of one build of the kernels for `limit`: the
 * smallest the selection kernels allow, the smallest the distance and bound
 * kernels allow, and the largest the selection kernels were built for. */
typedef struct {
    size_t limit;
    size_t select;
    size_t dist;
    size_t need;
} lbk_brute_fit;

/* One selection set: kernels built for chain length k (the bubble's, or
 * with `sort` the sort-merge's, which take the scratch too). */
typedef struct {
    cl_kernel groups, final;
    uint32_t w;
    int k;
    cl_mem best_k, best_i;
    bool sort;
} lbk_brute_bubble_set;

/* A device buffer a part of the engine allocates (lbk_brute_buffers). */
typedef struct {
    cl_mem *mem;
    size_t bytes;
    cl_mem_flags flags;
    const char *what;
} lbk_brute_buffer;

/* Set-up: the engine's settings before any planning (n == 0: nothing
 * else); residency, chunk and batch from the budget; the device bytes of
 * the whole shard; the rows its blocked layout pads `rows` to; the shard
 * onto the device; the shard's norms (*ok false: too large for the bounds,
 * nothing kept); the core's batch buffers (`norms`: with the bound's); any
 * part's buffers, each in turn. */
void lbk_brute_configure(lbk_brute *e, lbk_device *dev, const lbk_dataset *reference,
                         const lbk_brute_params *params);
lbk_status lbk_brute_plan(lbk_brute *e, uint64_t budget, uint64_t max_alloc,
                          const lbk_brute_needs *needs);
uint64_t lbk_brute_resident_bytes(const lbk_brute *e, const lbk_brute_needs *needs);
size_t lbk_brute_padded_rows(const lbk_brute *e, uint64_t rows);
lbk_status lbk_brute_place_refs(lbk_brute *e, const void *points, bool copy_shard);
lbk_status lbk_brute_shard_norms(lbk_brute *e, const void *points, bool *ok);
lbk_status lbk_brute_alloc(lbk_brute *e, const lbk_brute_needs *needs, bool norms);
lbk_status lbk_brute_buffers(lbk_brute *e, const lbk_brute_buffer *want, size_t count);

/* Every device buffer of the engine: lbk_device_buffer, its bytes counted
 * in e->device_bytes and e->device_peak; `bytes` more held elsewhere (a
 * baseline selector's scratch). */
lbk_status lbk_brute_device_buffer(lbk_brute *e, cl_mem_flags flags, size_t bytes, void *host,
                                   const char *what, cl_mem *mem);
void lbk_brute_count_device(lbk_brute *e, uint64_t bytes);

/* Programs and kernels: brute.cl for chain length k with work-groups of at
 * most `limit` (*w: its bubble's); the program every path takes kernels from
 * (chain K, or 1 under the sort-merge); a kernel (re)made, *fit lowered to
 * its work-group limit; whether the distance kernels fit as they are. */
lbk_status lbk_brute_compile(lbk_brute *e, int k, size_t limit, uint32_t *w, cl_program *program);
lbk_status lbk_brute_main_program(lbk_brute *e, size_t limit, uint32_t *w, cl_program *program);
lbk_status lbk_brute_kernel(lbk_brute *e, cl_program program, const char *name, cl_kernel *slot,
                            size_t *fit);
lbk_status lbk_brute_dist_fits(const lbk_brute *e, size_t dist_fit);

/* A batch on the device: the norms (false: some row too large for the bound
 * arithmetic); the chunk [c0, c0 + nr) where the kernels find it (streamed
 * when not resident; *r_first its first row, in blocks for the blocked
 * layout); the blocked kernels' query tile and launch; the selection into
 * set->best; the K best read back (`blocking` waits for the indices); the
 * queue drained and the kernels' times added up. */
bool lbk_brute_norms(const lbk_brute *e, const float *x, size_t rows, size_t dim, float *out);
lbk_status lbk_brute_chunk_refs(lbk_brute *e, uint64_t c0, cl_uint nr, cl_ulong *r_first);
cl_uint lbk_brute_blocked_tile(const lbk_brute *e, cl_uint nb, cl_uint nr);
lbk_status lbk_brute_blocked_launch(lbk_brute *e, cl_kernel kernel, cl_uint nb, cl_uint nr,
                                    cl_uint qt);
lbk_status lbk_brute_select(lbk_brute *e, const lbk_brute_bubble_set *set, cl_uint nb, cl_uint nr,
                            cl_uint base, cl_uint use_prev);
lbk_status lbk_brute_read_best(lbk_brute *e, uint64_t nq, float *keys, uint32_t *index,
                               cl_bool blocking);
void lbk_brute_finish(lbk_brute *e);

/* The non-NULL handles of the arrays released (the parts' destroys), the
 * buffers' bytes taken off e->device_bytes; the core's own handles and
 * memory (the paths' parts are gone by then). */
void lbk_brute_release(lbk_brute *e, cl_kernel *kernels, size_t nk, cl_mem *mems, size_t nm);
void lbk_brute_core_release(lbk_brute *e);

#endif
