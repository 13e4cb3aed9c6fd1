/* lbk_alloc_large's guard mode (LBKNN_GUARD_PAGES=1, set by CTest for the
 * guard cases): the byte right after an array of any size faults, the whole
 * array is usable, lbk_alloc_large_free releases guarded and plain (malloc'd)
 * pointers alike; without the variable, arrays come from the heap. Each
 * overrun is made in a child process, whose death by SIGSEGV is the check. */
#include "alloc_large.h"
#include "lbk_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Sizes around page and element boundaries. */
static const size_t sizes[] = {1, 3, 4, 63, 64, 4095, 4096, 4097, 65536 + 12, (size_t)5 << 20};

/* 1 when a write `past` bytes beyond the end of a fresh array of `bytes`
 * kills the child by SIGSEGV; 0 when the child survives it. */
static int overrun_faults(size_t bytes, size_t past)
{
    fflush(NULL);
    const pid_t pid = fork();
    LBK_ASSERT_TRUE(pid >= 0, "fork");
    if (pid == 0) {
        /* The plain signal death, also where a sanitizer would catch it. */
        signal(SIGSEGV, SIG_DFL);
        volatile unsigned char *p = lbk_alloc_large(bytes);
        if (!p)
            _exit(3);
        p[bytes - 1 + past] = 1;
        _exit(0);
    }
    int status = 0;
    LBK_ASSERT_EQ_INT(waitpid(pid, &status, 0), pid, "waitpid");
    LBK_ASSERT_TRUE(!WIFEXITED(status) || WEXITSTATUS(status) != 3, "allocation of %zu failed",
                    bytes);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static void run_guard_faults_past_end(void)
{
    LBK_ASSERT_TRUE(lbk_alloc_large_guarded(), "LBKNN_GUARD_PAGES=1 must turn guard mode on");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        LBK_EXPECT_FALSE(overrun_faults(sizes[i], 0), "the last byte of %zu is usable", sizes[i]);
        LBK_EXPECT_TRUE(overrun_faults(sizes[i], 1), "one byte past %zu bytes must fault",
                        sizes[i]);
    }
}

static void run_guard_whole_array_and_free(void)
{
    LBK_ASSERT_TRUE(lbk_alloc_large_guarded(), "LBKNN_GUARD_PAGES=1 must turn guard mode on");
    void *arrays[sizeof sizes / sizeof *sizes];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        arrays[i] = lbk_alloc_large(sizes[i]);
        LBK_ASSERT_TRUE(arrays[i] != NULL, "allocating %zu bytes", sizes[i]);
        memset(arrays[i], 0xa5, sizes[i]);
    }
    /* Freed out of order, with plain heap pointers in between: each goes
     * where it came from. */
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i += 2)
        lbk_alloc_large_free(arrays[i]);
    lbk_alloc_large_free(malloc(100));
    lbk_alloc_large_free(NULL);
    for (size_t i = 1; i < sizeof sizes / sizeof *sizes; i += 2)
        lbk_alloc_large_free(arrays[i]);
    void *empty = lbk_alloc_large(0);
    LBK_EXPECT_TRUE(empty != NULL, "0 bytes is not NULL");
    lbk_alloc_large_free(empty);
}

static void run_plain_mode(void)
{
    LBK_ASSERT_FALSE(lbk_alloc_large_guarded(),
                     "guard mode must be off without LBKNN_GUARD_PAGES");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = lbk_alloc_large(sizes[i]);
        LBK_ASSERT_TRUE(p != NULL, "allocating %zu bytes", sizes[i]);
        memset(p, 1, sizes[i]);
        if (sizes[i] >= LBK_ALLOC_LARGE_BYTES)
            LBK_EXPECT_EQ_U64((uint64_t)((uintptr_t)p % ((uintptr_t)2 << 20)), 0,
                              "a large array starts on a 2 MiB boundary");
        lbk_alloc_large_free(p);
    }
}

/* Run with LBKNN_GUARD_PAGES=1, and =0 (tests/alloc/CMakeLists.txt). */
static const lbk_test_case guard_cases[] = {
    {"guard_faults_past_end", run_guard_faults_past_end},
    {"guard_whole_array_and_free", run_guard_whole_array_and_free},
};
static const lbk_test_case plain_cases[] = {
    {"plain_mode", run_plain_mode},
};

LBK_TEST_MAIN(LBK_TEST_CASES(guard_cases), LBK_TEST_CASES(plain_cases))
