/* The brute engine's cascade path (brute_cascade.c), private to the engine:
 * the first row of the path table (brute.c); it hands the queries it caps
 * down to the prefilter path, whose bound it borrows. */
#ifndef LBK_BRUTE_CASCADE_IMPL_H
#define LBK_BRUTE_CASCADE_IMPL_H

#include "brute_core_impl.h"

#include <stdbool.h>

/* Its part, in the order of the engine's set-up: created where it applies
 * (needs the prefilter; *out NULL elsewhere); what it adds to the plan; its
 * groups and coarse shard (*ok false: the data does not suit it, the part to
 * be dropped); its kernel (inside brute.c's fit loop); its batch buffers. */
lbk_status lbk_brute_cascade_create(const lbk_brute *e, const lbk_brute_params *params,
                                    lbk_brute_cascade_state **out);
void lbk_brute_cascade_needs(const lbk_brute *e, const lbk_brute_cascade_state *c,
                             lbk_brute_needs *needs);
lbk_status lbk_brute_cascade_upload(lbk_brute *e, lbk_brute_cascade_state *c, const float *points,
                                    bool copy_shard, bool *ok);
lbk_status lbk_brute_cascade_kernels(lbk_brute *e, lbk_brute_cascade_state *c,
                                     lbk_brute_fit *fit);
lbk_status lbk_brute_cascade_alloc(lbk_brute *e, lbk_brute_cascade_state *c);
void lbk_brute_cascade_destroy(lbk_brute *e, lbk_brute_cascade_state *c);

extern const lbk_brute_path lbk_brute_cascade_path;

#endif
