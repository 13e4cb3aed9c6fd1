/* The radius of a radius search as a bound on the key (knn.h), so that the
 * engines compare keys, never distances.
 *
 * A reference point is inside the ball of query q iff its key is <=
 * lbk_radius_key_bound(metric, r), and that is equivalent to its reported
 * distance lbk_knn_key_to_distance(metric, key) being <= r (ip: its dot
 * product -key being >= r), exactly: the distance is a monotone function of
 * the key in float arithmetic, and the bound is the largest float key whose
 * distance passes. The keys are computed in the fixed order of knn.h on
 * every device, so every engine, device and sharding finds the same points,
 * ties at exactly r included. */
#ifndef LBK_RADIUS_H
#define LBK_RADIUS_H

#include "enums.h"

#include <stdbool.h>

/* A radius the search accepts: finite, and >= 0 except for ip, whose
 * radius is a least dot product and may be any finite number. */
bool lbk_radius_valid(lbk_metric metric, float radius);

/* The largest float key whose reported distance is <= radius (ip: whose
 * dot product is >= radius); -INFINITY when no key qualifies (a negative
 * or NaN radius), +INFINITY when every key does (cosine with r >= 2). */
float lbk_radius_key_bound(lbk_metric metric, float radius);

#endif
