/* Host reference of the tag-sort builder, written without any code from src/
 * (its own subtree sizes by counting, its own boxes kept per node), to check
 * the device builder element for element. */
#ifndef LBK_TEST_REF_TAGSORT_H
#define LBK_TEST_REF_TAGSORT_H

#include <stdint.h>

/* Subtree sizes of every node of a left-balanced tree of n nodes, by
 * counting bottom-up. size[] has n entries. */
void ref_subtree_sizes(uint64_t n, uint64_t *size);

/* Build: split 0 = round robin, 1 = widest. Outputs (caller-allocated):
 * tree points (n * dim), original row per node, split dim per node. Returns 0,
 * or -1 when out of memory. */
int ref_tagsort_build(const float *points, uint32_t n, int dim, int split, float *tree,
                      uint32_t *rows, uint8_t *split_dims);

#endif
