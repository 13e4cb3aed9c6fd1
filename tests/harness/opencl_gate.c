/* lbk_opencl_gate [--type any|cpu|gpu] COMMAND [ARG...]: runs COMMAND where
 * the OpenCL ICD loader finds a device (of that type), and otherwise exits
 * 77 (skipped) without running it. For the script-driven tests that need a
 * device; the C test programs call lbk_test_require_opencl themselves.
 * With LBK_TEST_REQUIRE_OPENCL=1 no device at all is a failure (exit 1),
 * not a skip; a device of another type than --type asks for still skips.
 *
 * lbk_opencl_gate --has any|cpu|gpu: exits 0 when a device of that type
 * exists, 1 when none does, and runs nothing: for scripts that choose what
 * to check by the machine, without asking the code under test. */
#include "lbk_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int parse_type(const char *s, lbk_test_device_type *type)
{
    static const char *const names[] = {"any", "cpu", "gpu"};
    for (int t = 0; t < 3; t++)
        if (strcmp(s, names[t]) == 0) {
            *type = (lbk_test_device_type)t;
            return 1;
        }
    return 0;
}

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--type any|cpu|gpu] COMMAND [ARG...]\n"
            "       %s --has any|cpu|gpu\n",
            prog, prog);
    return 2;
}

int main(int argc, char **argv)
{
    lbk_test_device_type type = LBK_TEST_DEVICE_ANY;
    char why[160];
    if (argc == 3 && strcmp(argv[1], "--has") == 0) {
        if (!parse_type(argv[2], &type))
            return usage(argv[0]);
        const int found = lbk_test_opencl_found_type(type, why, sizeof why);
        printf("%s\n", found ? "found" : why);
        return found ? 0 : 1;
    }
    int first = 1;
    if (argc >= 2 && strcmp(argv[1], "--type") == 0) {
        if (argc < 3 || !parse_type(argv[2], &type))
            return usage(argv[0]);
        first = 3;
    }
    if (argc <= first)
        return usage(argv[0]);
    const char *name = argv[first];
    if (!lbk_test_opencl_found(why, sizeof why)) {
        if (lbk_test_opencl_required()) {
            printf("FAIL %s: %s, " LBK_TEST_REQUIRE_OPENCL_HINT "\n", name, why);
            return 1;
        }
        printf("SKIP %s: %s\n", name, why);
        return 77;
    }
    if (!lbk_test_opencl_found_type(type, why, sizeof why)) {
        printf("SKIP %s: %s\n", name, why);
        return 77;
    }
    fflush(stdout);
    execvp(name, argv + first);
    fprintf(stderr, "%s: cannot run %s: %s\n", argv[0], name, strerror(errno));
    return 127;
}
