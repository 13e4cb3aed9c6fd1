#include "radius.h"

#include "knn.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

bool lbk_radius_valid(lbk_metric metric, float radius)
{
    if (!isfinite(radius))
        return false;
    return metric == LBK_METRIC_IP || radius >= 0.0f;
}

const char *lbk_radius_refusal(lbk_metric metric, double radius)
{
    if (isnan(radius))
        return "not a number";
    if (!(fabs(radius) <= FLT_MAX))
        return "not finite as a float (the search's radius is a float, at most 3.4e38)";
    if (metric != LBK_METRIC_IP && radius < 0.0)
        return "negative (a radius is a distance, >= 0; only metric ip takes a negative one: a "
               "least dot product)";
    return NULL;
}

float lbk_radius_of_double(lbk_metric metric, double radius)
{
    if (isnan(radius))
        return NAN;
    if (fabs(radius) > FLT_MAX) /* refused before: only defined here */
        return radius > 0.0 ? INFINITY : -INFINITY;
    float f = (float)radius;
    if (metric == LBK_METRIC_IP && (double)f < radius)
        f = nextafterf(f, INFINITY);
    else if (metric != LBK_METRIC_IP && (double)f > radius)
        f = nextafterf(f, -INFINITY);
    return f;
}

/* Float order as unsigned order (-inf first, +inf last, -0 before +0). */
static uint32_t order_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u);
}

static float float_of(uint32_t u)
{
    const uint32_t b = u ^ ((u >> 31) ? 0x80000000u : 0xffffffffu);
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static bool inside(lbk_metric metric, float key, float radius)
{
    return lbk_knn_key_to_distance(metric, key) <= radius;
}

/* The largest key in [lo, +inf] that is inside, by bisection over the float
 * order: the distance is monotone in the key, so the keys inside are an
 * initial run of it. Stepping with nextafterf from r*r or r - 1 could take
 * millions of steps where the distance's rounding is coarse (cosine's 1 +
 * key near key = 0). */
static float largest_inside(lbk_metric metric, float lo, float radius)
{
    uint32_t a = order_of(lo), b = order_of(INFINITY);
    if (!inside(metric, lo, radius))
        return -INFINITY;
    if (inside(metric, INFINITY, radius))
        return INFINITY;
    while (b - a > 1) { /* inside(a), not inside(b) */
        const uint32_t m = a + (b - a) / 2;
        if (inside(metric, float_of(m), radius))
            a = m;
        else
            b = m;
    }
    return float_of(a);
}

float lbk_radius_key_bound(lbk_metric metric, float radius)
{
    if (isnan(radius))
        return -INFINITY;
    switch (metric) {
    case LBK_METRIC_IP: return -radius; /* dot >= r iff -dot <= -r: negation is exact */
    case LBK_METRIC_COSINE: return largest_inside(metric, -INFINITY, radius);
    case LBK_METRIC_L2: return largest_inside(metric, 0.0f, radius);
    default: return radius >= 0.0f ? radius : -INFINITY; /* the distance is the key */
    }
}
