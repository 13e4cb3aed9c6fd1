#include "device_cl.h"
#include "device_impl.h"

#include "alloc_large.h"
#include "env_lock.h"
#include "log.h"
#include "rlimit.h"
#include "try.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

/* A device as enumerated: every platform's devices, GPUs of all platforms
 * first, so that "index i" means the same in `lbknn devices` and in a job. */
typedef struct {
    cl_platform_id platform;
    cl_device_id device;
    bool is_gpu;
} device_entry;

/* A table of names, several a line. */
/* clang-format off */
const char *lbk_device_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
    E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY) E(CL_BUILD_PROGRAM_FAILURE)
    E(CL_INVALID_VALUE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BUILD_OPTIONS)
    E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE)
    E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION)
    E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET)
    E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION)
    E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_PLATFORM_NOT_FOUND_KHR)
#undef E
    default: return "unknown OpenCL error";
    }
}
/* clang-format on */

lbk_status lbk_device_cl_check(cl_int err, const char *what)
{
    if (err == CL_SUCCESS)
        return LBK_OK;
    lbk_error("%s: OpenCL error %s (%d)", what, lbk_device_cl_error_name(err), (int)err);
    return LBK_ERR_DEVICE;
}

static void print_install_hint(void)
{
    /* Under an address-space limit an installed runtime that cannot map
     * what it needs shows no platform at all: then the limit is the news. */
    const uint64_t limit = lbk_rlimit_as_limit();
    if (limit != UINT64_MAX) {
        lbk_error("no OpenCL platform could start within the address-space limit (ulimit -v, "
                  "SGE h_vmem) of %.0f MiB: raise the limit, then check with 'lbknn devices'",
                  (double)limit / (1024.0 * 1024.0));
        return;
    }
    lbk_error("no usable OpenCL device found; on Debian install a CPU implementation with "
              "'apt-get install pocl-opencl-icd ocl-icd-libopencl1' (or your GPU vendor's "
              "OpenCL ICD) and check with 'lbknn devices'");
}

/* GPUs first, then everything else, in platform order; the platforms'
 * error, CL_SUCCESS when there are none. */
static cl_int list_devices(device_entry *entries, int *count)
{
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint nplat = 0;
    *count = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, platforms, &nplat);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || nplat == 0)
        return CL_SUCCESS;
    if (err != CL_SUCCESS)
        return err;
    for (int pass = 0; pass < 2; pass++) {
        const cl_device_type want =
            pass == 0 ? CL_DEVICE_TYPE_GPU : (CL_DEVICE_TYPE_ALL & ~CL_DEVICE_TYPE_GPU);
        for (cl_uint p = 0; p < nplat && p < MAX_PLATFORMS; p++) {
            cl_device_id ids[MAX_DEVICES];
            cl_uint nd = 0;
            if (clGetDeviceIDs(platforms[p], want, MAX_DEVICES, ids, &nd) != CL_SUCCESS)
                continue;
            for (cl_uint d = 0; d < nd && *count < MAX_DEVICES; d++) {
                entries[*count].platform = platforms[p];
                entries[*count].device = ids[d];
                entries[*count].is_gpu = pass == 0;
                (*count)++;
            }
        }
    }
    return CL_SUCCESS;
}

/* PoCL (3.1, Debian 12's) starts its devices in the first clGetDeviceIDs,
 * and another thread's call meanwhile finds none (CL_DEVICE_NOT_FOUND);
 * starting them, it reads its POCL_* variables, which another context's
 * CPU share may be setting: the listing holds the environment's lock.
 * Logged outside the lock, since a message may reach a library caller's
 * callback. */
static lbk_status enumerate(device_entry *entries, int *count)
{
    lbk_env_lock_acquire();
    const cl_int err = list_devices(entries, count);
    lbk_env_lock_release();
    return lbk_device_cl_check(err, "listing OpenCL platforms");
}

static bool matches(const device_entry *e, lbk_device_type type)
{
    switch (type) {
    case LBK_DEVICE_GPU: return e->is_gpu;
    case LBK_DEVICE_CPU: return !e->is_gpu;
    case LBK_DEVICE_ANY: return true;
    }
    return false;
}

/* Index into `entries` of the device a request picks, or -1 with a reason. */
static int pick(const device_entry *entries, int count, const lbk_device_request *req, char *why,
                size_t why_size)
{
    int matching[MAX_DEVICES];
    int nmatch = 0;
    for (int i = 0; i < count; i++)
        if (matches(&entries[i], req->type))
            matching[nmatch++] = i;
    if (nmatch == 0) {
        snprintf(why, why_size,
                 "no OpenCL device of type '%s' (found %d device%s of other types)",
                 lbk_device_type_name(req->type), count, count == 1 ? "" : "s");
        return -1;
    }
    int want;
    if (req->list && req->list_len > 0) {
        want = req->list[req->local_rank % req->list_len];
        if (want < 0 || want >= nmatch) {
            snprintf(why, why_size,
                     "device.list asks for device %d but only %d device%s of type '%s' exist",
                     want, nmatch, nmatch == 1 ? "" : "s", lbk_device_type_name(req->type));
            return -1;
        }
    } else {
        want = (req->local_rank < 0 ? 0 : req->local_rank) % nmatch;
    }
    return matching[want];
}

static void device_string(cl_device_id dev, cl_device_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(dev, what, size, buf, NULL) != CL_SUCCESS)
        snprintf(buf, size, "?");
    buf[size - 1] = '\0';
}

static void platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetPlatformInfo(p, what, size, buf, NULL) != CL_SUCCESS)
        snprintf(buf, size, "?");
    buf[size - 1] = '\0';
}

/* The entry a request picks, or a logged error. */
static lbk_status choose(const lbk_device_request *req, device_entry *entries, int *count,
                         int *chosen)
{
    char why[256];
    LBK_TRY(enumerate(entries, count));
    if (*count == 0) {
        print_install_hint();
        return LBK_ERR_DEVICE;
    }
    *chosen = pick(entries, *count, req, why, sizeof why);
    LBK_FAIL_IF(*chosen < 0, LBK_ERR_DEVICE,
                "%s; see 'lbknn devices' (device.type: any accepts every type)", why);
    return LBK_OK;
}

static void read_info(lbk_device *dev)
{
    cl_ulong gm = 0, ma = 0, lm = 0;
    cl_uint cu = 0, width = 0;
    size_t wg = 0;
    cl_device_type type = 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    dev->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof width, &width, NULL);
    dev->global_mem = gm;
    dev->max_alloc = ma;
    dev->local_mem = lm;
    dev->compute_units = (int)cu;
    dev->max_work_group = wg;
    dev->native_float_width = (int)width;

    char pname[256];
    device_string(dev->id, CL_DEVICE_NAME, dev->name, sizeof dev->name);
    device_string(dev->id, CL_DEVICE_VERSION, dev->version, sizeof dev->version);
    device_string(dev->id, CL_DRIVER_VERSION, dev->driver, sizeof dev->driver);
    platform_string(dev->platform, CL_PLATFORM_NAME, pname, sizeof pname);
    snprintf(dev->description, sizeof dev->description, "%s (%s, %s)", dev->name, pname,
             dev->version);
}

static lbk_status create_queue(lbk_device *dev)
{
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform,
                                     0};
    dev->context = clCreateContext(props, 1, &dev->id, NULL, NULL, &err);
    LBK_TRY(lbk_device_cl_check(err, "creating the OpenCL context"));
    dev->queue = clCreateCommandQueue(dev->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
    return lbk_device_cl_check(err, "creating the OpenCL command queue");
}

/* Address space an OpenCL runtime needs beyond what it maps once started:
 * compiling a kernel (PoCL's LLVM took up to 170 MiB for the brute engine's
 * on a cold cache, and aborts when it cannot get it) and its threads'
 * malloc arenas. */
#define RUNTIME_RESERVE (UINT64_C(256) << 20)
/* Below this much for the device itself nothing useful fits. */
#define DEVICE_MINIMUM (UINT64_C(16) << 20)

/* A CPU runtime's device buffers, and any runtime's own allocations, are
 * mappings of this process: under an address-space limit, a buffer beyond
 * what is left fails inside the runtime, where some (PoCL) abort. So, once
 * the runtime has started, the device's memory as the engines see it is at
 * most half of what is left after the runtime's reserve; the other half is
 * for the host's batch buffers. */
static lbk_status cap_to_address_space(lbk_device *dev)
{
    snprintf(dev->memory_hint, sizeof dev->memory_hint, "raise device.memory_mb");
    if (lbk_rlimit_as_limit() == UINT64_MAX)
        return LBK_OK;
    LBK_TRY(lbk_rlimit_as_require(RUNTIME_RESERVE + 2 * DEVICE_MINIMUM,
                                  "compiling and running the OpenCL kernels"));
    const uint64_t share = (lbk_rlimit_as_room() - RUNTIME_RESERVE) / 2;
    if (share >= dev->global_mem)
        return LBK_OK;
    dev->memory_capped = true;
    dev->global_mem = share;
    if (dev->max_alloc > share)
        dev->max_alloc = share;
    snprintf(dev->memory_hint, sizeof dev->memory_hint,
             "raise the address-space limit (ulimit -v, SGE h_vmem: %.0f MiB, %.0f MiB of it "
             "left for the device)",
             (double)lbk_rlimit_as_limit() / 1048576.0, (double)share / 1048576.0);
    return LBK_OK;
}

/* The number of compute units that `threads` asks of a device with `all`. */
static cl_uint wanted_units(int threads, cl_uint all)
{
    if (threads == 0 || all == 0)
        return all;
    const long long n = threads > 0 ? threads : (long long)all + 1 + threads;
    return n < 1 ? 1 : n > (long long)all ? all : (cl_uint)n;
}

/* A CPU device limited to fewer compute units is a sub-device of that many
 * (PoCL then starts that many worker threads for it): a share of the
 * cores for a process that shares them with others (scikit-learn's
 * n_jobs), whatever POCL_MAX_PTHREAD_COUNT made the whole device. */
static lbk_status limit_units(lbk_device *dev, int threads)
{
    cl_uint all = 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof all, &all, NULL);
    const cl_uint want = wanted_units(threads, all);
    if (!dev->is_cpu || want >= all)
        return LBK_OK;
    const cl_device_partition_property props[] = {CL_DEVICE_PARTITION_BY_COUNTS,
                                                  (cl_device_partition_property)want,
                                                  CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
    cl_device_id sub = NULL;
    cl_uint made = 0;
    const cl_int err = clCreateSubDevices(dev->id, props, 1, &sub, &made);
    LBK_FAIL_IF(err != CL_SUCCESS || made != 1, LBK_ERR_DEVICE,
                "device.threads = %d: cannot limit the CPU device to %u of its %u compute "
                "units: OpenCL error %s (%d) from clCreateSubDevices",
                threads, (unsigned)want, (unsigned)all, lbk_device_cl_error_name(err), (int)err);
    dev->id = sub;
    dev->id_is_sub_device = true;
    return LBK_OK;
}

lbk_status lbk_device_open(const lbk_device_request *req, lbk_device **out)
{
    device_entry entries[MAX_DEVICES];
    int count = 0, chosen = -1;

    *out = NULL;
    LBK_TRY(choose(req, entries, &count, &chosen));
    lbk_device *dev = calloc(1, sizeof *dev);
    LBK_FAIL_IF(!dev, LBK_ERR_NOMEM, "out of host memory opening the OpenCL device");
    dev->platform = entries[chosen].platform;
    dev->id = entries[chosen].device;
    dev->is_gpu = entries[chosen].is_gpu;
    dev->index = 0;
    for (int i = 0; i < chosen; i++)
        dev->index += matches(&entries[i], req->type);
    read_info(dev);
    lbk_status st = limit_units(dev, req->threads);
    if (st == LBK_OK && dev->id_is_sub_device)
        read_info(dev);
    dev->backs_buffers = dev->is_cpu && !req->runtime_buffers;
    if (st == LBK_OK)
        st = create_queue(dev);
    if (st == LBK_OK)
        st = cap_to_address_space(dev);
    if (st != LBK_OK) {
        lbk_device_close(dev);
        return st;
    }
    *out = dev;
    return LBK_OK;
}

void lbk_device_close(lbk_device *dev)
{
    if (!dev)
        return;
    for (int i = 0; i < dev->program_count; i++)
        clReleaseProgram(dev->programs[i].program);
    if (dev->queue) {
        clFinish(dev->queue);
        clReleaseCommandQueue(dev->queue);
    }
    if (dev->context)
        clReleaseContext(dev->context);
    if (dev->id_is_sub_device)
        clReleaseDevice(dev->id);
    free(dev);
}

const char *lbk_device_description(const lbk_device *dev) { return dev->description; }
int lbk_device_index(const lbk_device *dev) { return dev->index; }

void lbk_device_label(const lbk_device *dev, int node_rank, char *buf, size_t size)
{
    if (dev->id_is_sub_device)
        snprintf(buf, size, "%s [index %d, node rank %d, %d compute unit%s]",
                 lbk_device_description(dev), dev->index, node_rank, dev->compute_units,
                 dev->compute_units == 1 ? "" : "s");
    else
        snprintf(buf, size, "%s [index %d, node rank %d]", lbk_device_description(dev),
                 dev->index, node_rank);
}
bool lbk_device_is_gpu(const lbk_device *dev) { return dev->is_gpu; }
bool lbk_device_is_cpu(const lbk_device *dev) { return dev->is_cpu; }
uint64_t lbk_device_global_mem(const lbk_device *dev) { return dev->global_mem; }
uint64_t lbk_device_max_alloc(const lbk_device *dev) { return dev->max_alloc; }
bool lbk_device_memory_capped(const lbk_device *dev) { return dev->memory_capped; }
const char *lbk_device_memory_hint(const lbk_device *dev) { return dev->memory_hint; }
uint64_t lbk_device_local_mem(const lbk_device *dev) { return dev->local_mem; }
int lbk_device_compute_units(const lbk_device *dev) { return dev->compute_units; }
size_t lbk_device_max_work_group(const lbk_device *dev) { return dev->max_work_group; }
int lbk_device_native_float_width(const lbk_device *dev) { return dev->native_float_width; }
const char *lbk_device_name(const lbk_device *dev) { return dev->name; }
const char *lbk_device_driver(const lbk_device *dev) { return dev->driver; }
const char *lbk_device_version(const lbk_device *dev) { return dev->version; }

cl_context lbk_device_context(const lbk_device *dev) { return dev->context; }
cl_command_queue lbk_device_queue(const lbk_device *dev) { return dev->queue; }
cl_device_id lbk_device_id(const lbk_device *dev) { return dev->id; }

lbk_status lbk_device_list(FILE *out, const lbk_device_request *req)
{
    device_entry entries[MAX_DEVICES];
    int count = 0;
    char why[256];
    LBK_TRY(enumerate(entries, &count));
    if (count == 0) {
        fprintf(out, "No OpenCL platforms or devices found.\n");
        print_install_hint();
        return LBK_ERR_DEVICE;
    }
    int chosen = pick(entries, count, req, why, sizeof why);
    fprintf(out, "OpenCL devices (GPUs first; 'index' counts within device.type '%s'):\n",
            lbk_device_type_name(req->type));
    int index = 0;
    for (int i = 0; i < count; i++) {
        char name[256], pname[256], version[128];
        cl_ulong gm = 0;
        cl_uint cu = 0;
        device_string(entries[i].device, CL_DEVICE_NAME, name, sizeof name);
        device_string(entries[i].device, CL_DEVICE_VERSION, version, sizeof version);
        platform_string(entries[i].platform, CL_PLATFORM_NAME, pname, sizeof pname);
        clGetDeviceInfo(entries[i].device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
        clGetDeviceInfo(entries[i].device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
        char idx[16] = "-";
        if (matches(&entries[i], req->type))
            snprintf(idx, sizeof idx, "%d", index++);
        fprintf(out,
                "  %s index %-3s %-4s %s\n      platform: %s; %s; %u compute units; %.1f GiB\n",
                i == chosen ? "*" : " ", idx, entries[i].is_gpu ? "GPU" : "CPU", name, pname,
                version, cu, (double)gm / (1024.0 * 1024.0 * 1024.0));
    }
    if (chosen < 0) {
        fprintf(out, "No device matches: %s\n", why);
        return LBK_ERR_DEVICE;
    }
    fprintf(out, "* = the device rank 0 would use with device.type '%s'\n",
            lbk_device_type_name(req->type));
    return LBK_OK;
}

static void CL_CALLBACK free_backing(cl_mem mem, void *backing)
{
    (void)mem;
    lbk_alloc_large_free(backing);
}

/* A CPU device's buffer is host memory that the kernel touches first. Where
 * the runtime allocates it, that is one fault per 4 KiB page (3.6 us each on
 * a PVM guest: 0.12 s for 32 MiB, against 2 ms on huge pages); backed by
 * lbk_alloc_large it is on huge pages, and under guard mode an overrun by a
 * kernel faults like one by the host. */
static bool backed(const lbk_device *dev, cl_mem_flags flags, size_t bytes, const void *host)
{
    const bool runtime_memory =
        !host || ((flags & CL_MEM_COPY_HOST_PTR) && !(flags & CL_MEM_USE_HOST_PTR));
    /* Below LBK_ALLOC_LARGE_BYTES lbk_alloc_large is malloc, less aligned
     * than the runtime's CL_DEVICE_MEM_BASE_ADDR_ALIGN and no faster: those
     * stay the runtime's, except in guard mode. Too large a buffer is left
     * to clCreateBuffer to refuse, before anything is allocated. */
    return dev->backs_buffers && runtime_memory && !(flags & CL_MEM_ALLOC_HOST_PTR) &&
           bytes <= dev->max_alloc &&
           (bytes >= LBK_ALLOC_LARGE_BYTES || (bytes && lbk_alloc_large_guarded()));
}

static cl_mem create_backed(lbk_device *dev, cl_mem_flags flags, size_t bytes, const void *copy,
                            cl_int *err)
{
    void *backing = lbk_alloc_large(bytes);
    if (!backing) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    if (copy) /* before the buffer exists: the runtime may read it there */
        memcpy(backing, copy, bytes);
    flags = (flags & ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR) | CL_MEM_USE_HOST_PTR;
    cl_mem mem = clCreateBuffer(dev->context, flags, bytes, backing, err);
    if (*err == CL_SUCCESS)
        *err = clSetMemObjectDestructorCallback(mem, free_backing, backing);
    else
        lbk_alloc_large_free(backing);
    if (*err != CL_SUCCESS && mem) {
        clReleaseMemObject(mem);
        lbk_alloc_large_free(backing);
        mem = NULL;
    }
    return mem;
}

lbk_status lbk_device_buffer(lbk_device *dev, cl_mem_flags flags, size_t bytes, void *host,
                             const char *what, cl_mem *out)
{
    cl_int err;
    /* Zero-size buffers are invalid in OpenCL; empty shards still get a
     * valid handle. */
    if (backed(dev, flags, bytes, host))
        *out = create_backed(dev, flags, bytes, host, &err);
    else
        *out = clCreateBuffer(dev->context, flags, bytes ? bytes : 16, bytes ? host : NULL, &err);
    if (err != CL_SUCCESS) {
        lbk_error("allocating %s (%.1f MiB) on %s: OpenCL error %s", what,
                  (double)bytes / (1024.0 * 1024.0), dev->description,
                  lbk_device_cl_error_name(err));
        *out = NULL;
        return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
                       err == CL_OUT_OF_RESOURCES
                   ? LBK_ERR_NOMEM
                   : LBK_ERR_DEVICE;
    }
    return LBK_OK;
}

size_t lbk_device_kernel_work_group_limit(const lbk_device *dev, cl_kernel kernel)
{
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(kernel, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                                 NULL) != CL_SUCCESS)
        return 0;
    return wg;
}

void lbk_device_kernel_name(cl_kernel kernel, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, buf, NULL) != CL_SUCCESS)
        snprintf(buf, size, "?");
    buf[size - 1] = '\0';
}

lbk_status lbk_device_kernel_set_args(cl_kernel kernel, const lbk_device_kernel_arg *args,
                                      size_t count)
{
    char name[128];
    cl_uint expected = 0;
    cl_int err = clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof expected, &expected, NULL);
    if (err == CL_SUCCESS && expected != count) {
        lbk_device_kernel_name(kernel, name, sizeof name);
        lbk_error("internal: kernel %s takes %u arguments, %zu given", name, (unsigned)expected,
                  count);
        return LBK_ERR_INTERNAL;
    }
    for (size_t i = 0; i < count; i++) {
        err = clSetKernelArg(kernel, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            lbk_device_kernel_name(kernel, name, sizeof name);
            lbk_error("setting argument %zu of kernel %s: OpenCL error %s", i, name,
                      lbk_device_cl_error_name(err));
            return LBK_ERR_DEVICE;
        }
    }
    return LBK_OK;
}
