/* The brute engine's exact path (brute_exact.c), private to the engine: the
 * last row of the path table (brute.c), which settles every query. */
#ifndef LBK_BRUTE_EXACT_IMPL_H
#define LBK_BRUTE_EXACT_IMPL_H

#include "brute_core_impl.h"

/* Its part: the distance and selection kernels (built by _kernels, inside
 * brute.c's loop that fits every path's kernels to one work-group limit). */
lbk_status lbk_brute_exact_create(lbk_brute_exact_state **out);
lbk_status lbk_brute_exact_kernels(lbk_brute *e, lbk_brute_exact_state *x, lbk_brute_fit *fit);
void lbk_brute_exact_destroy(lbk_brute_exact_state *x);

extern const lbk_brute_path lbk_brute_exact_path;

#endif
