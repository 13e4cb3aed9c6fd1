/* The test harness every C test program links: assertions that print their
 * operands, a name -> case table with one main, skips (exit 77), one seeded
 * random generator. Independent of src/.
 *
 * Assertions. Every form takes an optional printf-style message after its
 * operands, and on failure prints file:line, each operand as written and its
 * value, then the message:
 *     LBK_EXPECT_EQ_INT(a, b)        LBK_EXPECT_INT(a, op, b)    (long long)
 *     LBK_EXPECT_EQ_U64(a, b)        LBK_EXPECT_U64(a, op, b)    (unsigned long long)
 *     LBK_EXPECT_EQ_FLOAT(a, b)      the same float bits (-0 is not +0)
 *     LBK_EXPECT_EQ_DOUBLE(a, b)     the same double bits
 *     LBK_EXPECT_NEAR(a, b, tol)     |a - b| <= tol, in double
 *     LBK_EXPECT_EQ_STR(a, b)        strcmp; NULL equals only NULL
 *     LBK_EXPECT_EQ_MEM(a, b, n)     n bytes; the first difference is shown
 *     LBK_EXPECT_TRUE(c)  LBK_EXPECT_FALSE(c)
 * op is one of == != < <= > >=. EXPECT counts a failure and carries on; each
 * form is an expression, true when the check held. The LBK_ASSERT_ forms stop
 * the case on failure (never use them between the collective calls of an MPI
 * test: the other ranks would wait forever). */
#ifndef LBK_TEST_H
#define LBK_TEST_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LBK_TEST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define LBK_TEST_NORETURN __attribute__((noreturn))
#else
#define LBK_TEST_PRINTF(f, a)
#define LBK_TEST_NORETURN
#endif

/* ---- cases and main ---- */

typedef struct {
    const char *name;
    void (*run)(void);
} lbk_test_case;

/* Cases in an array. rows: any struct array whose first member is the case
 * name (const char *); run_row gets a pointer to the row (NULL: the rows are
 * lbk_test_case and carry their own function). CMake registers the tests
 * from the array's source (lbk_test_cases in tests/CMakeLists.txt): write
 * each row's name first, as a string literal, {"name", ...}. */
typedef struct {
    const void *rows;
    size_t count;
    size_t stride;
    void (*run_row)(const void *row);
} lbk_test_table;

#define LBK_TEST_CASES(cases)                                                                    \
    {                                                                                            \
        (cases), sizeof(cases) / sizeof((cases)[0]), sizeof((cases)[0]), NULL                    \
    }
#define LBK_TEST_ROWS(rows, run_row)                                                             \
    {                                                                                            \
        (rows), sizeof(rows) / sizeof((rows)[0]), sizeof((rows)[0]), (run_row)                   \
    }

/* `prog CASE [ARG...]` runs one case: exit 0 when every check held, 1 when
 * one failed, 77 when it skipped; `prog --all` runs every case in table
 * order in this one process, each saying "NAME: ok" or why not (a case that
 * needs arguments fails), and exits 1 when any failed, else 77 when any
 * skipped, else 0; `prog --list` lists the cases; anything else (an unknown
 * case, a missing argument) exits 2. */
int lbk_test_main(int argc, char **argv, const lbk_test_table *tables, size_t ntables);

/* Called after each case with its name and result (0, 1 or 77); returns
 * the result to count instead. An MPI program makes it the worst over its
 * ranks (lbk_test_mpi.h), so that every rank of an --all run goes on to
 * the next case together. */
typedef int (*lbk_test_case_done)(const char *name, int result);
/* lbk_test_main with `done` after each case (NULL: none). */
int lbk_test_main_with(int argc, char **argv, const lbk_test_table *tables, size_t ntables,
                       lbk_test_case_done done);

#define LBK_TEST_MAIN(...)                                                                       \
    int main(int argc, char **argv)                                                              \
    {                                                                                            \
        const lbk_test_table lbk_test_tables_[] = {__VA_ARGS__};                                 \
        return lbk_test_main(argc, argv, lbk_test_tables_,                                       \
                             sizeof lbk_test_tables_ / sizeof lbk_test_tables_[0]);              \
    }

/* Arguments after the case name. lbk_test_args exits 2 with the usage line
 * unless there are between min and max of them (max < 0: no limit). */
void lbk_test_args(int min, int max, const char *usage);
int lbk_test_arg_count(void);
const char *lbk_test_arg(int i);

/* Failures counted so far in this case. */
int lbk_test_failures(void);

/* Put before every line the harness prints (e.g. "rank 2: "), so that the
 * output of several MPI ranks can be told apart. */
void lbk_test_set_prefix(const char *prefix);

/* Ends the case as skipped (exit 77: CTest's SKIP_RETURN_CODE), saying why. */
void lbk_test_skip(const char *fmt, ...) LBK_TEST_PRINTF(1, 2) LBK_TEST_NORETURN;

/* Ends the case as failed, saying why (exit 1). */
void lbk_test_fail(const char *fmt, ...) LBK_TEST_PRINTF(1, 2) LBK_TEST_NORETURN;

/* Skips unless the OpenCL ICD loader finds a platform with a device. With
 * LBK_TEST_REQUIRE_OPENCL=1 in the environment (a CI machine that must have
 * one) it fails instead: a lost ICD registration then fails the suite
 * rather than skipping every device test. */
void lbk_test_require_opencl(void);
/* Whether LBK_TEST_REQUIRE_OPENCL is set to 1; what a failure then adds. */
int lbk_test_opencl_required(void);
#define LBK_TEST_REQUIRE_OPENCL_HINT                                                             \
    "and LBK_TEST_REQUIRE_OPENCL=1 requires one (is an ICD registered under "                    \
    "/etc/OpenCL/vendors, or OCL_ICD_VENDORS set?)"
/* 1 when it does; otherwise 0 and why (at most n bytes) in why. */
int lbk_test_opencl_found(char *why, size_t n);

/* Device types, for lbk_test_opencl_found_type. */
typedef enum {
    LBK_TEST_DEVICE_ANY,
    LBK_TEST_DEVICE_CPU,
    LBK_TEST_DEVICE_GPU
} lbk_test_device_type;
/* 1 when some platform has a device of that type (asked of the ICD loader,
 * not of src/device); otherwise 0 and why in why. */
int lbk_test_opencl_found_type(lbk_test_device_type type, char *why, size_t n);

/* ---- random data ---- */

/* splitmix64: seeded explicitly, so every run draws the same data. */
typedef struct {
    uint64_t state;
} lbk_test_rng;

#define LBK_TEST_RNG(seed)                                                                       \
    {                                                                                            \
        (seed)                                                                                   \
    }

uint64_t lbk_test_rng_next(lbk_test_rng *rng);
/* next % n (n > 0): the slight bias is of no matter to a test. */
uint64_t lbk_test_rng_below(lbk_test_rng *rng, uint64_t n);
/* Uniform in [0, 1) with 24 bits: next's top 24 bits. */
float lbk_test_rng_unit(lbk_test_rng *rng);
/* The value a generator seeded with x draws first: a hash for data that must
 * be a pure function of where it is (any rank can compute any part). */
uint64_t lbk_test_mix64(uint64_t x);

/* ---- assertions: the macros above; what follows is their machinery ---- */

typedef struct {
    const char *file;
    int line;
    int fatal;
} lbk_test_at;

/* text: the macro's arguments as written (#__VA_ARGS__, message included):
 * the harness cuts the operands out of it, so they print as written, not
 * macro-expanded. op: "==", or NULL to read it from the text (a, op, b).
 * Signed integers travel as their two's complement. */
int lbk_test_integer_(lbk_test_at at, const char *text, const char *op, int is_signed,
                      unsigned long long a, unsigned long long b, const char *fmt, ...)
    LBK_TEST_PRINTF(7, 8);
/* width 32: a and b are floats (exact in a double) and their float bits are
 * compared; 64: their double bits. */
int lbk_test_bits_(lbk_test_at at, const char *text, int width, double a, double b,
                   const char *fmt, ...) LBK_TEST_PRINTF(6, 7);
int lbk_test_near_(lbk_test_at at, const char *text, double a, double b, double tol,
                   const char *fmt, ...) LBK_TEST_PRINTF(6, 7);
int lbk_test_str_(lbk_test_at at, const char *text, const char *a, const char *b, const char *fmt,
                  ...) LBK_TEST_PRINTF(5, 6);
int lbk_test_mem_(lbk_test_at at, const char *text, const void *a, const void *b, size_t n,
                  const char *fmt, ...) LBK_TEST_PRINTF(6, 7);
int lbk_test_bool_(lbk_test_at at, const char *text, int want, int got, const char *fmt, ...)
    LBK_TEST_PRINTF(5, 6);

#define LBK_T_AT_(fatal) ((lbk_test_at){__FILE__, __LINE__, (fatal)})
/* Operand i of the arguments (the trailing ~ keeps "..." from being empty). */
#define LBK_T_1_(a, ...) a
#define LBK_T_2_(a, b, ...) b
#define LBK_T_3_(a, b, c, ...) c
#define LBK_T_A1_(...) LBK_T_1_(__VA_ARGS__, ~)
#define LBK_T_A2_(...) LBK_T_2_(__VA_ARGS__, ~)
#define LBK_T_A3_(...) LBK_T_3_(__VA_ARGS__, ~)
/* The message after n operands: the arguments that follow them, or none
 * ("%s", ""). Chosen by counting the arguments (at most 32 in all). */
#define LBK_T_CAT_(a, b) a##b
#define LBK_T_CAT(a, b) LBK_T_CAT_(a, b)
#define LBK_T_PICK_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,  \
                    a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32,   \
                    x, ...)                                                                      \
    x
#define LBK_T_M8_ lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m
#define LBK_T_M29_ LBK_T_M8_, LBK_T_M8_, LBK_T_M8_, lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m, lbk_t_m
/* One more level, so that LBK_T_M29_ is expanded before the arguments are counted. */
#define LBK_T_COUNT_(...) LBK_T_PICK_(__VA_ARGS__)
#define LBK_T_KIND1_(...) LBK_T_COUNT_(__VA_ARGS__, LBK_T_M29_, lbk_t_m, lbk_t_m, lbk_t_p, ~)
#define LBK_T_KIND2_(...) LBK_T_COUNT_(__VA_ARGS__, LBK_T_M29_, lbk_t_m, lbk_t_p, lbk_t_p, ~)
#define LBK_T_KIND3_(...) LBK_T_COUNT_(__VA_ARGS__, LBK_T_M29_, lbk_t_p, lbk_t_p, lbk_t_p, ~)
#define LBK_T_MSG1_lbk_t_p(a) "%s", ""
#define LBK_T_MSG1_lbk_t_m(a, ...) __VA_ARGS__
#define LBK_T_MSG2_lbk_t_p(a, b) "%s", ""
#define LBK_T_MSG2_lbk_t_m(a, b, ...) __VA_ARGS__
#define LBK_T_MSG3_lbk_t_p(a, b, c) "%s", ""
#define LBK_T_MSG3_lbk_t_m(a, b, c, ...) __VA_ARGS__
#define LBK_T_MSG1_(...) LBK_T_CAT(LBK_T_MSG1_, LBK_T_KIND1_(__VA_ARGS__))(__VA_ARGS__)
#define LBK_T_MSG2_(...) LBK_T_CAT(LBK_T_MSG2_, LBK_T_KIND2_(__VA_ARGS__))(__VA_ARGS__)
#define LBK_T_MSG3_(...) LBK_T_CAT(LBK_T_MSG3_, LBK_T_KIND3_(__VA_ARGS__))(__VA_ARGS__)

/* The operands, then the message, of "a, b[, msg]", "a, op, b[, msg]" and
 * "a, b, c[, msg]"; CALL_ expands them before the call splits its arguments. */
#define LBK_T_AB_(...) LBK_T_A1_(__VA_ARGS__), LBK_T_A2_(__VA_ARGS__), LBK_T_MSG2_(__VA_ARGS__)
#define LBK_T_AOPB_(...) LBK_T_A1_(__VA_ARGS__), LBK_T_A3_(__VA_ARGS__), LBK_T_MSG3_(__VA_ARGS__)
#define LBK_T_ABC_(...)                                                                          \
    LBK_T_A1_(__VA_ARGS__), LBK_T_A2_(__VA_ARGS__), LBK_T_A3_(__VA_ARGS__),                      \
        LBK_T_MSG3_(__VA_ARGS__)
#define LBK_T_CALL_(macro, ...) macro(__VA_ARGS__)

#define LBK_T_SIGNED_(x) ((unsigned long long)(long long)(x))
#define LBK_T_UNSIGNED_(x) ((unsigned long long)(x))
#define LBK_T_INTEGER_(f, text, op, is_signed, conv, a, b, ...)                                  \
    lbk_test_integer_(LBK_T_AT_(f), text, op, is_signed, conv(a), conv(b), __VA_ARGS__)
#define LBK_T_BITS_(f, text, width, type, a, b, ...)                                             \
    lbk_test_bits_(LBK_T_AT_(f), text, width, (type)(a), (type)(b), __VA_ARGS__)
#define LBK_T_NEAR_(f, text, a, b, tol, ...)                                                     \
    lbk_test_near_(LBK_T_AT_(f), text, (double)(a), (double)(b), (double)(tol), __VA_ARGS__)
#define LBK_T_STR_(f, text, a, b, ...) lbk_test_str_(LBK_T_AT_(f), text, a, b, __VA_ARGS__)
#define LBK_T_MEM_(f, text, a, b, n, ...) lbk_test_mem_(LBK_T_AT_(f), text, a, b, n, __VA_ARGS__)
#define LBK_T_BOOL_(f, want, text, c, ...)                                                       \
    lbk_test_bool_(LBK_T_AT_(f), text, want, (c) ? 1 : 0, __VA_ARGS__)

#define LBK_T_EQ_INT_(f, text, ...)                                                              \
    LBK_T_CALL_(LBK_T_INTEGER_, f, text, "==", 1, LBK_T_SIGNED_, LBK_T_AB_(__VA_ARGS__))
#define LBK_T_INT_(f, text, ...)                                                                 \
    LBK_T_CALL_(LBK_T_INTEGER_, f, text, NULL, 1, LBK_T_SIGNED_, LBK_T_AOPB_(__VA_ARGS__))
#define LBK_T_EQ_U64_(f, text, ...)                                                              \
    LBK_T_CALL_(LBK_T_INTEGER_, f, text, "==", 0, LBK_T_UNSIGNED_, LBK_T_AB_(__VA_ARGS__))
#define LBK_T_U64_(f, text, ...)                                                                 \
    LBK_T_CALL_(LBK_T_INTEGER_, f, text, NULL, 0, LBK_T_UNSIGNED_, LBK_T_AOPB_(__VA_ARGS__))
#define LBK_T_EQ_FLOAT_(f, text, ...)                                                            \
    LBK_T_CALL_(LBK_T_BITS_, f, text, 32, float, LBK_T_AB_(__VA_ARGS__))
#define LBK_T_EQ_DOUBLE_(f, text, ...)                                                           \
    LBK_T_CALL_(LBK_T_BITS_, f, text, 64, double, LBK_T_AB_(__VA_ARGS__))
#define LBK_T_NEAR1_(f, text, ...) LBK_T_CALL_(LBK_T_NEAR_, f, text, LBK_T_ABC_(__VA_ARGS__))
#define LBK_T_EQ_STR_(f, text, ...) LBK_T_CALL_(LBK_T_STR_, f, text, LBK_T_AB_(__VA_ARGS__))
#define LBK_T_EQ_MEM_(f, text, ...) LBK_T_CALL_(LBK_T_MEM_, f, text, LBK_T_ABC_(__VA_ARGS__))
#define LBK_T_TRUTH_(f, want, text, ...)                                                         \
    LBK_T_CALL_(LBK_T_BOOL_, f, want, text, LBK_T_A1_(__VA_ARGS__), LBK_T_MSG1_(__VA_ARGS__))

/* #__VA_ARGS__ here, in the macro the test calls: nowhere else is the text
 * still as written. */
#define LBK_EXPECT_EQ_INT(...) LBK_T_EQ_INT_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_INT(...) LBK_T_INT_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_EQ_U64(...) LBK_T_EQ_U64_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_U64(...) LBK_T_U64_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_EQ_FLOAT(...) LBK_T_EQ_FLOAT_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_EQ_DOUBLE(...) LBK_T_EQ_DOUBLE_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_NEAR(...) LBK_T_NEAR1_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_EQ_STR(...) LBK_T_EQ_STR_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_EQ_MEM(...) LBK_T_EQ_MEM_(0, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_TRUE(...) LBK_T_TRUTH_(0, 1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_EXPECT_FALSE(...) LBK_T_TRUTH_(0, 0, #__VA_ARGS__, __VA_ARGS__)

#define LBK_ASSERT_EQ_INT(...) LBK_T_EQ_INT_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_INT(...) LBK_T_INT_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_EQ_U64(...) LBK_T_EQ_U64_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_U64(...) LBK_T_U64_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_EQ_FLOAT(...) LBK_T_EQ_FLOAT_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_EQ_DOUBLE(...) LBK_T_EQ_DOUBLE_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_NEAR(...) LBK_T_NEAR1_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_EQ_STR(...) LBK_T_EQ_STR_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_EQ_MEM(...) LBK_T_EQ_MEM_(1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_TRUE(...) LBK_T_TRUTH_(1, 1, #__VA_ARGS__, __VA_ARGS__)
#define LBK_ASSERT_FALSE(...) LBK_T_TRUTH_(1, 0, #__VA_ARGS__, __VA_ARGS__)

#endif
