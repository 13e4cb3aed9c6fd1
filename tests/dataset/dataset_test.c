/* dataset_test CASE: runs one named case (see lbk_test.h). */
#include "cases.h"
#include "lbk_test.h"

LBK_TEST_MAIN(tk_good_cases, tk_synthetic_cases, tk_normalize_cases, tk_compact_cases,
              tk_bad_cases)
