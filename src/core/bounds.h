/* Sizes fixed at compile time that several layers must agree on. */
#ifndef LBK_BOUNDS_H
#define LBK_BOUNDS_H

#define LBK_PATH_MAX 1024 /* longest path a job may name, NUL included */
#define LBK_NAME_MAX 256  /* longest name of an array inside a file (an HDF5 dataset) */
#define LBK_K_MAX 4096    /* largest K the brute engine and the merge support */
#define LBK_TREE_K_MAX                                                                           \
    1024 /* largest K of the k-d tree (its list is one insertion
                               sort per work-item: O(K) per insertion) */

#endif
