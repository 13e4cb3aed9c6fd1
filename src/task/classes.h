/* The classes of a labelled reference set over every rank: the largest
 * label anywhere + 1, the probabilities' columns (`lbknn run` and the
 * library alike). */
#ifndef LBK_CLASSES_H
#define LBK_CLASSES_H

#include "comm.h"
#include "status.h"

#include <stdint.h>

/* The largest of `n` labels (-1 for none or NULL). */
int32_t lbk_classes_max_label(const int32_t *labels, uint64_t n);

/* Collective: the largest label of every rank's `n` labels (NULL: none),
 * and so the classes, largest + 1 (0 without labels anywhere). */
lbk_status lbk_classes_count(const lbk_comm *comm, const int32_t *labels, uint64_t n,
                             int32_t *classes);

#endif
