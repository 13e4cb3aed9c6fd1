/* What the library's radius calls share (lbknn_radius.c: the searches,
 * lbknn_index_radius_votes.c: the votes): their arguments' checks and the
 * queries as the index searches them. Private to src/api. */
#ifndef LBKNN_RADIUS_IMPL_H
#define LBKNN_RADIUS_IMPL_H

#include "lbknn_impl.h"

#include <stdint.h>

/* `radii` (n of them) or, where NULL, `radius`: finite and, but for ip,
 * >= 0. Not collective. */
lbk_status lbk_api_radius_check_radii(const lbknn_index *ix, uint64_t n, const float *radii,
                                      float radius);

/* The queries (a count, points where there are some, each finite) and
 * their radii. Not collective. */
lbk_status lbk_api_radius_check(const lbknn_index *ix, int64_t queries, const float *points,
                                const float *radii, float radius);

/* The queries of a radius call as the index takes them. */
typedef struct {
    uint64_t count;    /* every rank's (the same) */
    const float *mine; /* this rank's part: its slice where the plan owns slices */
    float *normalized; /* cosine: the queries normalised as the references (owned) */
} lbk_api_radius_queries;

/* Collective: `checked` (this rank's verdict on the arguments) agreed,
 * every rank's count the same, cosine's queries normalised and this rank's
 * slice taken. Free with lbk_api_radius_queries_free, also on failure. */
lbk_status lbk_api_radius_queries_prepare(const lbknn_index *ix, lbk_status checked,
                                          int64_t queries, const float *points,
                                          lbk_api_radius_queries *out);
void lbk_api_radius_queries_free(lbk_api_radius_queries *q);

#endif
