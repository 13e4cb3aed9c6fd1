/* The brute engine's exact path (brute_exact.c), private to the engine: the
 * last row of the path table (brute.c), which settles every query. */
#ifndef LBK_BRUTE_EXACT_IMPL_H
#define LBK_BRUTE_EXACT_IMPL_H

#include "brute_core_impl.h"

/* Whether a shard of this type gets the dot path (exact integer keys from
 * dot products: uint8 and int8, L2 and IP, the blocked kernel, unless the
 * prefilter is off, which keeps the per-pair integer kernel). */
bool lbk_brute_exact_dot(const lbk_device *dev, lbk_dtype type, lbk_metric metric,
                         lbk_brute_distance distance, lbk_brute_prefilter prefilter);

/* Its part, in the order of the engine's set-up: created (with the dot path
 * where it applies); what it adds to the plan; the shard's squared norms
 * (the dot path; `raw` the shard's rows); its kernels (built inside
 * brute.c's loop that fits every path's kernels to one work-group limit);
 * its batch buffers. */
lbk_status lbk_brute_exact_create(const lbk_brute *e, const lbk_brute_params *params,
                                  lbk_brute_exact_state **out);
void lbk_brute_exact_needs(const lbk_brute_exact_state *x, lbk_brute_needs *needs);
lbk_status lbk_brute_exact_upload(lbk_brute *e, lbk_brute_exact_state *x, const void *raw);
lbk_status lbk_brute_exact_kernels(lbk_brute *e, lbk_brute_exact_state *x, lbk_brute_fit *fit);
lbk_status lbk_brute_exact_alloc(lbk_brute *e, lbk_brute_exact_state *x);
void lbk_brute_exact_destroy(lbk_brute *e, lbk_brute_exact_state *x);

extern const lbk_brute_path lbk_brute_exact_path;

#endif
