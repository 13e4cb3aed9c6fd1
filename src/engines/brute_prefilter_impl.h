/* The brute engine's prefilter path (brute_prefilter.c), private to the
 * engine: the middle row of the path table (brute.c); it hands the queries
 * its bound cannot settle down to the exact path. The cascade above it
 * borrows its bound kernel and constant. */
#ifndef LBK_BRUTE_PREFILTER_IMPL_H
#define LBK_BRUTE_PREFILTER_IMPL_H

#include "brute_core_impl.h"

#include <stdbool.h>

/* Its part, in the order of the engine's set-up: created where it applies
 * (*out NULL elsewhere); what it adds to the plan; the shard's norms (*ok
 * false: too large for the bound, the part to be dropped); its kernels
 * (inside brute.c's fit loop); its batch buffers. */
lbk_status lbk_brute_prefilter_create(const lbk_brute *e, const lbk_brute_params *params,
                                      lbk_brute_prefilter_state **out);
void lbk_brute_prefilter_needs(const lbk_brute_prefilter_state *p, lbk_brute_needs *needs);
lbk_status lbk_brute_prefilter_upload(lbk_brute *e, lbk_brute_prefilter_state *p,
                                      const void *points, bool *ok);
lbk_status lbk_brute_prefilter_kernels(lbk_brute *e, lbk_brute_prefilter_state *p,
                                       lbk_brute_fit *fit);
lbk_status lbk_brute_prefilter_alloc(lbk_brute *e, lbk_brute_prefilter_state *p);
void lbk_brute_prefilter_destroy(lbk_brute *e, lbk_brute_prefilter_state *p);

extern const lbk_brute_path lbk_brute_prefilter_path;

/* The bound's constant c for `dim` dimensions (the proof is at its
 * definition). */
float lbk_brute_prefilter_bound_c(lbk_metric metric, int dim);
/* Its c for cosine over float16 rows scaled on the fly (brute_scale.h). */
float lbk_brute_prefilter_scaled_c(int dim);

/* The bound kernel (lbk_brute_bound_blocked) into the distance matrix, over
 * nb queries x nr rows: the full rows (prefilter) or the coarse ones
 * (cascade), with their norms and the bound's constant; block_first and
 * norm_first place a chunk. */
typedef struct {
    cl_mem queries, qnorm, refs, rnorm;
    cl_uint dim;
    cl_float c;
    cl_mem rscale; /* cosine over float16: the rows' factors (brute_scale.h) */
} lbk_brute_bound_rows;
lbk_status lbk_brute_prefilter_bound(lbk_brute *e, const lbk_brute_prefilter_state *p,
                                     const lbk_brute_bound_rows *rows, cl_uint nb, cl_uint nr,
                                     cl_ulong block_first, cl_ulong norm_first);

#endif
