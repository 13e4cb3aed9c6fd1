/* The OpenCL compiler's warnings never reach the terminal: a kernel that
 * warns (an assignment used as a condition, an unused variable) builds
 * through the device layer with nothing on stderr, where PoCL's compiler
 * itself would print "N warnings generated." without -w. */
#include "device.h"
#include "device_cl.h"
#include "lbk_test.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char warning_source[] = "__kernel void lbk_warns(__global int *a)\n"
                                     "{\n"
                                     "    int unused;\n"
                                     "    float x = 1.5f;\n"
                                     "    int y = x;\n"
                                     "    if (a[0] = 2)\n"
                                     "        a[1] = y;\n"
                                     "}\n";

static void warnings_stay_quiet(void)
{
    lbk_test_require_opencl();
    lbk_device *dev = NULL;
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    /* Options nobody else uses: a fresh compile, not a cached binary. */
    char options[64];
    snprintf(options, sizeof options, "-DLBK_WARNING_TEST=%ld", (long)getpid());
    FILE *tmp = tmpfile();
    fflush(stderr);
    const int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    cl_program program = NULL;
    const lbk_status st =
        lbk_device_program_source(dev, "warning_test.cl", warning_source, options, &program);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char got[4096];
    rewind(tmp);
    const size_t n = fread(got, 1, sizeof got - 1, tmp);
    got[n] = '\0';
    fclose(tmp);
    LBK_EXPECT_EQ_INT(st, LBK_OK);
    LBK_EXPECT_EQ_STR(got, "");
    lbk_device_close(dev);
}

static const lbk_test_case cases[] = {{"warnings_stay_quiet", warnings_stay_quiet}};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
