/* Cosine's row normalisation: done once per row, on the host, right after
 * the row is read (by the same code on every rank), so that every engine,
 * rank and device sees the same floats and results stay byte-identical.
 *
 * The operation order, per row (docs/design.md section 2):
 *   s = 0 (double); s = s + x_j * x_j   for j ascending (the product of two
 *                                       floats is exact in double)
 *   n = sqrt(s) (double);  x_j = (float)(x_j / n)   (the division in double)
 * A zero row stays zero: its dot product with any row is 0, so its cosine
 * distance to everything is 1, as with scikit-learn's normalize (and FAISS
 * on normalised vectors). */
#ifndef LBK_NORMALIZE_H
#define LBK_NORMALIZE_H

#include <stdint.h>

void lbk_normalize_rows(float *points, uint64_t rows, int dim);
/* n of one row as above (0 for a zero row): each x_j becomes
 * (float)((double)x_j / n). Brute force over float16 points reproduces
 * these values on the fly from it (src/engines/brute_scale.c). */
double lbk_normalize_norm(const float *x, int dim);

#endif
