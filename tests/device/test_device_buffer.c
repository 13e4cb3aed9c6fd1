/* Buffers of a CPU device (src/device/device_cl.h, lbk_device_buffer): made
 * over lbk_alloc_large memory, they keep OpenCL's meaning (a copied host
 * array is a copy; a kernel's writes read back) on both sides of the
 * huge-page threshold, and under guard mode (LBKNN_GUARD_PAGES=1, set by
 * CTest for the guard cases) a kernel's write one element past a buffer's
 * end faults, as the host's would. Each overrun runs in a child process
 * that opens the device itself (a runtime's threads do not survive fork);
 * its death by SIGSEGV is the check. */
#include "alloc_large.h"
#include "device.h"
#include "device_cl.h"
#include "lbk_test.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char kernels[] =
    "__kernel void lbk_poke(__global uint *a, uint at) { a[at] = 7u; }\n"
    "__kernel void lbk_add_one(__global uint *a)\n"
    "{ a[get_global_id(0)] += 1u; }\n";

/* Element counts: a start that is not page aligned under guard mode, one
 * page, and both sides of LBK_ALLOC_LARGE_BYTES. */
static const size_t counts[] = {1000, 1024, (LBK_ALLOC_LARGE_BYTES / 4) - 1,
                                (LBK_ALLOC_LARGE_BYTES / 4) + 3};

static void open_cpu(lbk_device **dev, cl_program *program)
{
    lbk_test_require_opencl();
    char why[160];
    if (!lbk_test_opencl_found_type(LBK_TEST_DEVICE_CPU, why, sizeof why))
        lbk_test_skip("%s", why);
    const lbk_device_request req = {.type = LBK_DEVICE_CPU};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, dev), LBK_OK);
    LBK_ASSERT_TRUE(lbk_device_is_cpu(*dev), "the device opened for type cpu is a CPU device");
    LBK_ASSERT_EQ_INT(lbk_device_program_source(*dev, "buffer_test.cl", kernels, "", program),
                      LBK_OK);
}

static void run_kernel(lbk_device *dev, cl_kernel kernel, size_t global)
{
    cl_command_queue queue = lbk_device_queue(dev);
    LBK_ASSERT_EQ_INT(
        clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL), CL_SUCCESS);
    LBK_ASSERT_EQ_INT(clFinish(queue), CL_SUCCESS);
}

/* In a child: a buffer of `count` uints (copied from the host's, or
 * not), the kernel writes element `at`. */
static void poke_child(size_t count, bool copied, size_t at)
{
    signal(SIGSEGV, SIG_DFL); /* the plain signal death, also under a sanitizer */
    lbk_device *dev = NULL;
    cl_program program = NULL;
    open_cpu(&dev, &program);
    uint32_t *host = copied ? calloc(count, 4) : NULL;
    LBK_ASSERT_TRUE(!copied || host, "host array");
    const cl_mem_flags flags = CL_MEM_READ_WRITE | (copied ? CL_MEM_COPY_HOST_PTR : 0);
    cl_mem buf = NULL;
    cl_kernel kernel = NULL;
    LBK_ASSERT_EQ_INT(lbk_device_buffer(dev, flags, count * 4, host, "poked", &buf), LBK_OK);
    LBK_ASSERT_EQ_INT(lbk_device_kernel(program, "lbk_poke", &kernel), LBK_OK);
    const cl_uint where = (cl_uint)at;
    LBK_ASSERT_EQ_INT(clSetKernelArg(kernel, 0, sizeof buf, &buf), CL_SUCCESS);
    LBK_ASSERT_EQ_INT(clSetKernelArg(kernel, 1, sizeof where, &where), CL_SUCCESS);
    run_kernel(dev, kernel, 1);
    _exit(0);
}

typedef enum { POKE_SURVIVED, POKE_FAULTED, POKE_OTHER } poke_outcome;

/* How the child ended: its write done and exit 0, killed by SIGSEGV, or
 * anything else (another signal, a failed check before the write). */
static poke_outcome poke(size_t count, bool copied, size_t at)
{
    fflush(NULL);
    const pid_t pid = fork();
    LBK_ASSERT_TRUE(pid >= 0, "fork");
    if (pid == 0)
        poke_child(count, copied, at);
    int status = 0;
    LBK_ASSERT_EQ_INT(waitpid(pid, &status, 0), pid, "waitpid");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        lbk_test_skip("no OpenCL CPU device");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return POKE_SURVIVED;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
        return POKE_FAULTED;
    return POKE_OTHER;
}

static void run_guard_kernel_overrun_faults(void)
{
    LBK_ASSERT_TRUE(lbk_alloc_large_guarded(), "LBKNN_GUARD_PAGES=1 must turn guard mode on");
    for (int copied = 0; copied < 2; copied++)
        for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
            const size_t n = counts[i];
            LBK_EXPECT_EQ_INT(poke(n, copied, n - 1), POKE_SURVIVED,
                              "the last of %zu uints (copied %d) is usable", n, copied);
            LBK_EXPECT_EQ_INT(poke(n, copied, n), POKE_FAULTED,
                              "a kernel's write one past %zu uints (copied %d) must fault", n,
                              copied);
        }
}

static void check_copy_and_write(lbk_device *dev, cl_kernel kernel, size_t count)
{
    uint32_t *host = malloc(count * 4), *back = malloc(count * 4);
    LBK_ASSERT_TRUE(host && back, "host arrays");
    for (size_t i = 0; i < count; i++)
        host[i] = (uint32_t)(i * 2654435761u);
    cl_mem copied = NULL, fresh = NULL;
    LBK_ASSERT_EQ_INT(lbk_device_buffer(dev, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, count * 4,
                                        host, "copied", &copied),
                      LBK_OK);
    LBK_ASSERT_EQ_INT(lbk_device_buffer(dev, CL_MEM_READ_WRITE, count * 4, NULL, "fresh", &fresh),
                      LBK_OK);
    /* A copy: the host array changed afterwards is not what the buffer holds. */
    memset(host, 0xff, count * 4);
    cl_command_queue queue = lbk_device_queue(dev);
    LBK_ASSERT_EQ_INT(clSetKernelArg(kernel, 0, sizeof copied, &copied), CL_SUCCESS);
    run_kernel(dev, kernel, count);
    LBK_ASSERT_EQ_INT(
        clEnqueueReadBuffer(queue, copied, CL_TRUE, 0, count * 4, back, 0, NULL, NULL),
        CL_SUCCESS);
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++)
        wrong += back[i] != (uint32_t)(i * 2654435761u) + 1u;
    LBK_EXPECT_EQ_U64(wrong, 0, "elements of a copied buffer of %zu wrong after the kernel",
                      count);
    for (size_t i = 0; i < count; i++)
        host[i] = (uint32_t)i;
    LBK_ASSERT_EQ_INT(
        clEnqueueWriteBuffer(queue, fresh, CL_TRUE, 0, count * 4, host, 0, NULL, NULL),
        CL_SUCCESS);
    LBK_ASSERT_EQ_INT(clSetKernelArg(kernel, 0, sizeof fresh, &fresh), CL_SUCCESS);
    run_kernel(dev, kernel, count);
    LBK_ASSERT_EQ_INT(
        clEnqueueReadBuffer(queue, fresh, CL_TRUE, 0, count * 4, back, 0, NULL, NULL),
        CL_SUCCESS);
    wrong = 0;
    for (size_t i = 0; i < count; i++)
        wrong += back[i] != (uint32_t)i + 1u;
    LBK_EXPECT_EQ_U64(wrong, 0, "elements of a written buffer of %zu wrong after the kernel",
                      count);
    clReleaseMemObject(copied);
    clReleaseMemObject(fresh);
    free(host);
    free(back);
}

static void run_cpu_buffer_keeps_meaning(void)
{
    lbk_device *dev = NULL;
    cl_program program = NULL;
    open_cpu(&dev, &program);
    cl_kernel kernel = NULL;
    LBK_ASSERT_EQ_INT(lbk_device_kernel(program, "lbk_add_one", &kernel), LBK_OK);
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        check_copy_and_write(dev, kernel, counts[i]);
    clReleaseKernel(kernel);
    lbk_device_close(dev);
}

static const lbk_test_case guard_cases[] = {
    {"guard_kernel_overrun_faults", run_guard_kernel_overrun_faults},
};
static const lbk_test_case plain_cases[] = {
    {"cpu_buffer_keeps_meaning", run_cpu_buffer_keeps_meaning},
};

LBK_TEST_MAIN(LBK_TEST_CASES(guard_cases), LBK_TEST_CASES(plain_cases))
