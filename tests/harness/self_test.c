/* The harness on itself: checks that hold pass, checks that fail say what
 * they compared (CMakeLists.txt matches the output), ASSERT stops a case,
 * skips exit 77. */
#include "lbk_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TWO_ARGS(a, b) ((a) + (b))

static void case_checks_pass(void)
{
    const float f = 0.1f;
    const char bytes[] = {1, 2, 3};
    int held = 1;
    held &= LBK_EXPECT_EQ_INT(-3, 2 - 5);
    held &= LBK_EXPECT_INT(TWO_ARGS(1, 2), <, 4, "with a message: %d", 4);
    held &= LBK_EXPECT_INT(2, >=, 2);
    held &= LBK_EXPECT_INT(-1, !=, 1);
    held &= LBK_EXPECT_EQ_U64(UINT64_MAX, ~(uint64_t)0);
    held &= LBK_EXPECT_U64(UINT64_C(1) << 63, >, 1u);
    held &= LBK_EXPECT_EQ_FLOAT(f, 0.1f);
    held &= LBK_EXPECT_EQ_FLOAT(INFINITY, INFINITY);
    held &= LBK_EXPECT_EQ_DOUBLE(0.5, 1.0 / 2);
    held &= LBK_EXPECT_NEAR(0.1 + 0.2, 0.3, 1e-12);
    held &= LBK_EXPECT_EQ_STR("a,b", "a,b", "%s", "commas inside strings are not operands");
    held &= LBK_EXPECT_EQ_STR(NULL, NULL);
    held &= LBK_EXPECT_EQ_MEM(bytes, ((const char[]){1, 2, 3}), 3);
    held &= LBK_EXPECT_TRUE(strchr("x,y", ',') != NULL);
    held &= LBK_EXPECT_FALSE(0,
                             "%s %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d "
                             "%d %d %d %d %d %d %d",
                             "a long message", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                             16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27);
    LBK_ASSERT_TRUE(held, "every EXPECT above returns true when it holds");
    LBK_ASSERT_EQ_INT(lbk_test_failures(), 0);
    /* splitmix64's published first outputs for seed 0. */
    lbk_test_rng rng = LBK_TEST_RNG(0);
    LBK_EXPECT_EQ_U64(lbk_test_rng_next(&rng), UINT64_C(0xe220a8397b1dcdaf));
    LBK_EXPECT_EQ_U64(lbk_test_rng_next(&rng), UINT64_C(0x6e789e6aa1b965f4));
    LBK_EXPECT_EQ_U64(lbk_test_mix64(0), UINT64_C(0xe220a8397b1dcdaf));
    const float u = lbk_test_rng_unit(&rng);
    LBK_EXPECT_TRUE(u >= 0.0f && u < 1.0f, "unit %g", (double)u);
    LBK_EXPECT_U64(lbk_test_rng_below(&rng, 10), <, 10);
}

static void case_expect_fail(void)
{
    const int answer = 41, wanted = 43;
    LBK_EXPECT_EQ_INT(answer + 1, wanted, "context %d", 7);
    printf("after the failed expect\n");
}

/* One failure of each form; the test matches every report. */
static void case_every_form_fails(void)
{
    const unsigned long long big = 5;
    const float key = 1.5f;
    const char *word = "left";
    LBK_EXPECT_U64(big, <, 3);
    LBK_EXPECT_EQ_FLOAT(key, -key);
    LBK_EXPECT_EQ_DOUBLE(0.0, -0.0);
    LBK_EXPECT_NEAR(1.0, 1.5, 0.25);
    LBK_EXPECT_EQ_STR(word, "ri\"ght\n");
    LBK_EXPECT_EQ_MEM("abcd", "abXd", 4);
    LBK_EXPECT_TRUE(big == 4, "big is %llu", big);
    LBK_EXPECT_FALSE(big == 5);
}

static void case_assert_stops(void)
{
    LBK_ASSERT_TRUE(1 + 1 == 3);
    printf("not stopped\n");
}

static void case_skip(void) { lbk_test_skip("skipped on purpose (%d)", 77); }

static void case_prefix(void)
{
    lbk_test_set_prefix("rank 3: ");
    LBK_EXPECT_EQ_INT(1, 2);
}

static void case_needs_args(void)
{
    lbk_test_args(2, 2, "FIRST SECOND");
    LBK_EXPECT_EQ_STR(lbk_test_arg(0), "one");
    LBK_EXPECT_EQ_STR(lbk_test_arg(1), "two");
    LBK_EXPECT_EQ_INT(lbk_test_arg_count(), 2);
    LBK_EXPECT_TRUE(lbk_test_arg(2) == NULL);
}

/* lbk_test_require_opencl: returns where a device exists; otherwise skips,
 * or fails under LBK_TEST_REQUIRE_OPENCL=1 (CMakeLists.txt runs it with an
 * ICD loader that finds nothing). */
static void case_require_opencl(void)
{
    lbk_test_require_opencl();
    printf("an OpenCL device was found\n");
}

static void case_fail(void)
{
    lbk_test_fail("failed on purpose (%d)", 1);
    printf("not stopped\n");
}

static const lbk_test_case cases[] = {
    {"checks_pass", case_checks_pass},
    {"expect_fail", case_expect_fail},
    {"every_form_fails", case_every_form_fails},
    {"assert_stops", case_assert_stops},
    {"skip", case_skip},
    {"prefix", case_prefix},
    {"needs_args", case_needs_args},
    {"require_opencl", case_require_opencl},
    {"fail", case_fail},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
