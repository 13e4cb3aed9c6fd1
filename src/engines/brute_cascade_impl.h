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

/* The control both cascades share (the float32 one and the integer one,
 * brute_icascade.c): the data check at set-up (unless forced), a short
 * first batch probing the data, and the cap: a query that would need more
 * than max_checks exact keys goes down to the next path, and once most
 * queries through the cascade so far did (over every batch, so that one
 * short batch cannot decide alone), the rest of the run skips it. */
typedef struct {
    bool forced;           /* LBK_PREFILTER_CASCADE: whatever the data */
    bool probed;           /* the first (short) batch has run */
    uint32_t max_checks;   /* max(256, n / 16) */
    uint64_t seen, capped; /* queries through it, and of them capped */
    bool off;
} lbk_brute_cascade_cap;

/* The control for a shard of n rows, searched with `params`. */
lbk_brute_cascade_cap lbk_brute_cascade_cap_for(uint64_t n, const lbk_brute_params *params);
/* The dimension groups (*group_of, dim entries, freed with the cascade) of
 * m float32 rows of the shard (the rows themselves, or a widened sample of
 * them), and whether the data suits a cascade: unless forced, the coarse
 * rows must keep half the squared distances (lbk_cascade_capture). */
lbk_status lbk_brute_cascade_groups(const lbk_brute *e, const lbk_brute_cascade_cap *cap,
                                    const float *rows, size_t m, int **group_of, bool *ok);
/* The batch a cascade may take now: a short probe first, then n. */
uint64_t lbk_brute_cascade_probe(lbk_brute_cascade_cap *cap, uint64_t n);
/* One batch's capped queries flagged in `down` (checks[q] exact keys each),
 * the others' checks counted in the engine's timing. */
void lbk_brute_cascade_hand_down(lbk_brute *e, lbk_brute_cascade_cap *cap, const uint32_t *checks,
                                 uint64_t nq, lbk_brute_handoff *down);
/* A read-only buffer of a host array: used in place on a CPU device (no
 * copy by the runtime), copied elsewhere or with `copy`. */
lbk_status lbk_brute_cascade_host_buffer(lbk_brute *e, const void *host, size_t bytes, bool copy,
                                         const char *what, cl_mem *out);

#endif
