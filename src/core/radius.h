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

/* Why a radius given as a double (a job's, a radii file's, Python's) is no
 * radius of the metric, or NULL when it is one: it must be finite within
 * float's range (the search is in float) and, but for ip, >= 0 as the
 * double itself (-1e-50 is negative, though it rounds to -0). */
const char *lbk_radius_refusal(lbk_metric metric, double radius);

/* A valid double radius as the float the search takes, rounded toward the
 * inside of the ball: the largest float <= radius (ip: the smallest float
 * >= radius, the test being dot >= r). A distance is a float, so it is <=
 * radius iff it is <= this float: the ball is exactly the double's, where
 * the nearest float could take in points beyond it (0.1 rounds up). */
float lbk_radius_of_double(lbk_metric metric, double radius);

/* The largest float key whose reported distance is <= radius (ip: whose
 * dot product is >= radius); -INFINITY when no key qualifies (a negative
 * or NaN radius), +INFINITY when every key does (cosine with r >= 2). */
float lbk_radius_key_bound(lbk_metric metric, float radius);

#endif
