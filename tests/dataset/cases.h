/* The dataset test cases, by name; dataset_test runs one per invocation so
 * that CTest reports each behaviour on its own (CMakeLists.txt reads the
 * names from the tables' rows). */
#ifndef LBK_DATASET_CASES_H
#define LBK_DATASET_CASES_H

#include "lbk_test.h"

extern const lbk_test_table tk_good_cases;
extern const lbk_test_table tk_synthetic_cases;
/* Compact points at their own width (compact_cases.c). */
extern const lbk_test_table tk_compact_cases;
/* Cosine's row normalisation (normalize_cases.c). */
extern const lbk_test_table tk_normalize_cases;
/* Malformed inputs (bad_cases.c); their CTest tests are dataset.bad_NAME. */
extern const lbk_test_table tk_bad_cases;

#endif
