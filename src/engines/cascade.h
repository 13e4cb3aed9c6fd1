/* The L2 cascade's host arithmetic, private to the brute engine. The
 * cascade is the prefilter with a cheaper first stage: the dimensions are cut
 * into groups of at most LBK_CASCADE_GROUP, and each row becomes its group
 * sums divided by 2 = sqrt(4). By Cauchy-Schwarz, for any vectors q, r and
 * group G of at most 4 dimensions,
 *     sum_{j in G} (q_j - r_j)^2 >= (sum_G q - sum_G r)^2 / 4,
 * so the squared distance between the coarse rows (a quarter of the
 * dimensions) is a lower bound of the exact one. The device bounds it again
 * from below in GEMM form (the prefilter's bound kernel on the coarse rows);
 * each query then takes the rows of its K' smallest bounds as first
 * candidates, and checks every row whose coarse bound is within the
 * threshold below of the running K-th exact key with the prefilter's full
 * bound, computing exact keys only where that does not exclude the row
 * (kernels/brute.cl, lbk_cascade_exact). The threshold turns a K-th exact
 * key into the coarse bound's scale with every rounding accounted for;
 * docs/design.md (section 6) has the proof. */
#ifndef LBK_CASCADE_H
#define LBK_CASCADE_H

#include "status.h"

#include <stddef.h>

#define LBK_CASCADE_GROUP 4
/* Above this dimension the groups are runs of consecutive dimensions (the
 * correlation matrix would take too much memory and time). */
#define LBK_CASCADE_GROUPING_MAX_DIM 2048

/* Dimensions of the coarse rows. */
int lbk_cascade_dim(int dim);

/* The groups: perm[g * LBK_CASCADE_GROUP + t] is group g's t-th dimension,
 * or -1 where a group has fewer. Any partition keeps the bound exact; the
 * tighter it is, the fewer rows need checking. Dimensions go together that
 * are most correlated over a sample of up to 256 rows of x (greedy: a group
 * starts at the lowest free dimension and takes the free dimension of the
 * highest least correlation with its members), which found 2 x 2 pixel
 * blocks' quality on Fashion-MNIST: 0.68 % of the pairs left, against 1.3 %
 * for runs of four pixels (bench/results/cpu.md, run E). perm holds
 * lbk_cascade_dim(dim) * LBK_CASCADE_GROUP entries. */
lbk_status lbk_cascade_grouping(const float *x, size_t rows, int dim, int *perm);

/* group_of[j] (dim entries): the group of dimension j under perm. */
void lbk_cascade_group_of(const int *perm, int dim, int *group_of);

/* out (lbk_cascade_dim(dim) values) = the coarse row of `row`: each group's
 * float sum (dimensions in ascending order), halved. */
void lbk_cascade_coarsen(const float *row, int dim, const int *group_of, float *out);

/* How much of the squared distance the coarse rows keep: sum C / sum D
 * over pairs of rows spread through x (at most 128 pairs), C the coarse
 * distance and D the full one; 1 when no pair differs. About 1/4 for
 * independent dimensions (uniform data, Gaussian blobs), 0.86 on
 * Fashion-MNIST. scratch: 2 * lbk_cascade_dim(dim) floats. */
double lbk_cascade_capture(const float *x, size_t rows, int dim, const int *group_of,
                           float *scratch);

/* The threshold is t = kth * slope + eps(q), evaluated in float on the
 * device: a row whose coarse bound exceeds t has an exact key above kth. */
float lbk_cascade_slope(int dim);
float lbk_cascade_eps(double query_norm2, double largest_ref_norm2);

#endif
