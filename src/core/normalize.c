#include "normalize.h"

#include <math.h>

/* The product of two floats is exact in double (48 significant bits of 53),
 * so only the sum rounds, and compilers do not reorder a floating-point sum
 * (no -ffast-math here): the order written is the order run. */
double lbk_normalize_norm(const float *x, int dim)
{
    double s = 0.0;
    for (int j = 0; j < dim; j++) {
        const double sq = (double)x[j] * (double)x[j];
        s = s + sq;
    }
    return s == 0.0 ? 0.0 : sqrt(s);
}

void lbk_normalize_rows(float *points, uint64_t rows, int dim)
{
    for (uint64_t i = 0; i < rows; i++) {
        float *x = points + i * (uint64_t)dim;
        const double n = lbk_normalize_norm(x, dim);
        if (n == 0.0)
            continue;
        for (int j = 0; j < dim; j++)
            x[j] = (float)((double)x[j] / n);
    }
}
