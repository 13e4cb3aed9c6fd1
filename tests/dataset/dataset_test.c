/* dataset_test CASE: runs one named case; exit 0 when every CHECK held. */
#include "cases.h"
#include "testkit.h"

#include <stdio.h>
#include <string.h>

static bool run_from(const tk_case *cases, const char *name)
{
    for (const tk_case *c = cases; c->name; c++) {
        if (strcmp(c->name, name) == 0) {
            c->run();
            return true;
        }
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    const char *name = argv[1];
    if (!run_from(tk_good_cases, name) && !run_from(tk_synthetic_cases, name) &&
        !tk_run_bad(name)) {
        printf("unknown case '%s'\n", name);
        return 2;
    }
    if (tk_failures)
        printf("%s: %d check(s) failed\n", name, tk_failures);
    return tk_failures ? 1 : 0;
}
