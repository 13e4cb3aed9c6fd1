/* The brute engine's integer cascade path (brute_icascade.c), private to the
 * engine: the first row of the path table (brute.c) for uint8 and int8
 * shards with L2; it hands the queries it caps down to the exact path (the
 * dot path). */
#ifndef LBK_BRUTE_ICASCADE_IMPL_H
#define LBK_BRUTE_ICASCADE_IMPL_H

#include "brute_core_impl.h"

#include <stdbool.h>

/* Up to this dimension no int32 of the integer cascade wraps: C4 <= 4 D <=
 * 4 x 8192 x 255^2 = 2,130,739,200 < 2^31 (docs/design.md "Compact
 * reference points"). */
#define LBK_BRUTE_ICASCADE_DIM_MAX 8192

/* Its part, in the order of the engine's set-up, as the float32 cascade's
 * (brute_cascade_impl.h): created where it applies (*out NULL elsewhere);
 * what it adds to the plan; its groups, coarse shard and row-major shard
 * (*ok false: the data does not suit it, the part to be dropped); its
 * kernels; its batch buffers. */
lbk_status lbk_brute_icascade_create(const lbk_brute *e, const lbk_brute_params *params,
                                     lbk_brute_icascade_state **out);
void lbk_brute_icascade_needs(const lbk_brute *e, const lbk_brute_icascade_state *c,
                              lbk_brute_needs *needs);
lbk_status lbk_brute_icascade_upload(lbk_brute *e, lbk_brute_icascade_state *c, const void *raw,
                                     bool copy_shard, bool *ok);
lbk_status lbk_brute_icascade_kernels(lbk_brute *e, lbk_brute_icascade_state *c,
                                      lbk_brute_fit *fit);
lbk_status lbk_brute_icascade_alloc(lbk_brute *e, lbk_brute_icascade_state *c);
void lbk_brute_icascade_destroy(lbk_brute *e, lbk_brute_icascade_state *c);

extern const lbk_brute_path lbk_brute_icascade_path;

#endif
