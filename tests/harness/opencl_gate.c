/* lbk_opencl_gate COMMAND [ARG...]: runs COMMAND where the OpenCL ICD loader
 * finds a device, and otherwise exits 77 (skipped) without running it. For
 * the script-driven tests that need a device; the C test programs call
 * lbk_test_require_opencl themselves. */
#include "lbk_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]);
        return 2;
    }
    char why[160];
    if (!lbk_test_opencl_found(why, sizeof why)) {
        printf("SKIP %s: %s\n", argv[1], why);
        return 77;
    }
    fflush(stdout);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "%s: cannot run %s: %s\n", argv[0], argv[1], strerror(errno));
    return 127;
}
