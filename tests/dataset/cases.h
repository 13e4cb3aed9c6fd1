/* The dataset test cases, by name; dataset_test runs one per invocation so
 * that CTest reports each behaviour on its own. */
#ifndef LBK_DATASET_CASES_H
#define LBK_DATASET_CASES_H

#include <stdbool.h>

typedef struct {
    const char *name;
    void (*run)(void);
} tk_case;

extern const tk_case tk_good_cases[];
extern const tk_case tk_synthetic_cases[];

/* Runs the malformed-input case of that name; false when there is none. */
bool tk_run_bad(const char *name);

#endif
