/* Sizes fixed at compile time that several layers must agree on. */
#ifndef LBK_BOUNDS_H
#define LBK_BOUNDS_H

#define LBK_PATH_MAX 1024   /* longest path a job may name, NUL included */
#define LBK_K_MAX 1024      /* largest K any engine and the merge support */

#endif
