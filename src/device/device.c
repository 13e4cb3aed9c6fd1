#include "device_cl.h"

#include "embedded_kernels.h"
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64
#define MAX_PROGRAMS 32

typedef struct {
    char file[64];
    char options[256];
    cl_program program;
} cached_program;

struct lbk_device {
    cl_platform_id platform;
    cl_device_id id;
    cl_context context;
    cl_command_queue queue;
    int index;
    bool is_gpu;
    uint64_t global_mem, max_alloc, local_mem;
    int compute_units;
    char description[256 + 256 + 128 + 8];
    cached_program programs[MAX_PROGRAMS];
    int program_count;
};

/* A device as enumerated: every platform's devices, GPUs of all platforms
 * first, so that "index i" means the same in `lbknn devices` and in a job. */
typedef struct {
    cl_platform_id platform;
    cl_device_id device;
    bool is_gpu;
} device_entry;

const char *lbk_cl_error_name(cl_int err)
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

lbk_status lbk_cl_check(cl_int err, const char *what)
{
    if (err == CL_SUCCESS)
        return LBK_OK;
    lbk_error("%s: OpenCL error %s (%d)", what, lbk_cl_error_name(err), (int)err);
    return LBK_ERR_DEVICE;
}

static void print_install_hint(void)
{
    lbk_error("no usable OpenCL device found; on Debian install a CPU implementation with "
              "'apt-get install pocl-opencl-icd ocl-icd-libopencl1' (or your GPU vendor's "
              "OpenCL ICD) and check with 'lbknn devices'");
}

/* GPUs first, then everything else, in platform order. */
static lbk_status enumerate(device_entry *entries, int *count)
{
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint nplat = 0;
    *count = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, platforms, &nplat);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || nplat == 0)
        return LBK_OK;
    if (err != CL_SUCCESS)
        return lbk_cl_check(err, "listing OpenCL platforms");
    for (int pass = 0; pass < 2; pass++) {
        const cl_device_type want = pass == 0 ? CL_DEVICE_TYPE_GPU : (CL_DEVICE_TYPE_ALL & ~CL_DEVICE_TYPE_GPU);
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
    return LBK_OK;
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
static int pick(const device_entry *entries, int count, const lbk_device_request *req,
                char *why, size_t why_size)
{
    int matching[MAX_DEVICES];
    int nmatch = 0;
    for (int i = 0; i < count; i++)
        if (matches(&entries[i], req->type))
            matching[nmatch++] = i;
    if (nmatch == 0) {
        snprintf(why, why_size, "no OpenCL device of type '%s' (found %d device%s of other types)",
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

lbk_status lbk_device_open(const lbk_device_request *req, lbk_device **out)
{
    lbk_status st = LBK_OK;
    lbk_device *dev = NULL;
    device_entry entries[MAX_DEVICES];
    int count = 0;
    char why[256];
    cl_int err;

    *out = NULL;
    st = enumerate(entries, &count);
    if (st != LBK_OK)
        goto cleanup;
    if (count == 0) {
        print_install_hint();
        st = LBK_ERR_DEVICE;
        goto cleanup;
    }
    int chosen = pick(entries, count, req, why, sizeof why);
    if (chosen < 0) {
        lbk_error("%s; see 'lbknn devices' (device.type: any accepts every type)", why);
        st = LBK_ERR_DEVICE;
        goto cleanup;
    }
    dev = calloc(1, sizeof *dev);
    if (!dev) {
        lbk_error("out of host memory opening the OpenCL device");
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    dev->platform = entries[chosen].platform;
    dev->id = entries[chosen].device;
    dev->is_gpu = entries[chosen].is_gpu;
    dev->index = 0;
    for (int i = 0; i < chosen; i++)
        dev->index += matches(&entries[i], req->type);

    cl_ulong gm = 0, ma = 0, lm = 0;
    cl_uint cu = 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    clGetDeviceInfo(dev->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    dev->global_mem = gm;
    dev->max_alloc = ma;
    dev->local_mem = lm;
    dev->compute_units = (int)cu;

    char name[256], pname[256], version[128];
    device_string(dev->id, CL_DEVICE_NAME, name, sizeof name);
    device_string(dev->id, CL_DEVICE_VERSION, version, sizeof version);
    platform_string(dev->platform, CL_PLATFORM_NAME, pname, sizeof pname);
    snprintf(dev->description, sizeof dev->description, "%s (%s, %s)", name, pname, version);

    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
    dev->context = clCreateContext(props, 1, &dev->id, NULL, NULL, &err);
    if ((st = lbk_cl_check(err, "creating the OpenCL context")) != LBK_OK)
        goto cleanup;
    dev->queue = clCreateCommandQueue(dev->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if ((st = lbk_cl_check(err, "creating the OpenCL command queue")) != LBK_OK)
        goto cleanup;
    *out = dev;
    dev = NULL;
cleanup:
    lbk_device_close(dev);
    return st;
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
    free(dev);
}

const char *lbk_device_description(const lbk_device *dev) { return dev->description; }
int lbk_device_index(const lbk_device *dev) { return dev->index; }
bool lbk_device_is_gpu(const lbk_device *dev) { return dev->is_gpu; }
uint64_t lbk_device_global_mem(const lbk_device *dev) { return dev->global_mem; }
uint64_t lbk_device_max_alloc(const lbk_device *dev) { return dev->max_alloc; }
uint64_t lbk_device_local_mem(const lbk_device *dev) { return dev->local_mem; }
int lbk_device_compute_units(const lbk_device *dev) { return dev->compute_units; }
cl_context lbk_device_context(const lbk_device *dev) { return dev->context; }
cl_command_queue lbk_device_queue(const lbk_device *dev) { return dev->queue; }
cl_device_id lbk_device_id(const lbk_device *dev) { return dev->id; }

lbk_status lbk_device_list(FILE *out, const lbk_device_request *req)
{
    device_entry entries[MAX_DEVICES];
    int count = 0;
    char why[256];
    lbk_status st = enumerate(entries, &count);
    if (st != LBK_OK)
        return st;
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
        fprintf(out, "  %s index %-3s %-4s %s\n      platform: %s; %s; %u compute units; %.1f GiB\n",
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

lbk_status lbk_device_program(lbk_device *dev, const char *file, const char *options,
                              cl_program *out)
{
    lbk_status st = LBK_OK;
    char *source = NULL;
    char *log = NULL;
    cl_program program = NULL;
    cl_int err;
    const char *opts = options ? options : "";

    for (int i = 0; i < dev->program_count; i++) {
        if (strcmp(dev->programs[i].file, file) == 0 && strcmp(dev->programs[i].options, opts) == 0) {
            *out = dev->programs[i].program;
            return LBK_OK;
        }
    }
    const lbk_embedded_file *shared = lbk_embedded_find("lbk_shared.h");
    const lbk_embedded_file *kernel = lbk_embedded_find(file);
    if (!shared || !kernel || dev->program_count == MAX_PROGRAMS || strlen(file) >= 64 ||
        strlen(opts) >= 256) {
        lbk_error("internal: kernel file '%s' is not embedded or too many programs", file);
        st = LBK_ERR_INTERNAL;
        goto cleanup;
    }
    /* The shared header is pasted in rather than #included, because the
     * program is built from memory with no include path. */
    size_t len = shared->length + kernel->length + 64;
    source = malloc(len);
    if (!source) {
        st = LBK_ERR_NOMEM;
        lbk_error("out of host memory building %s", file);
        goto cleanup;
    }
    snprintf(source, len, "%s\n#line 1 \"%s\"\n%s", shared->source, file, kernel->source);
    const char *src = source;
    program = clCreateProgramWithSource(dev->context, 1, &src, NULL, &err);
    if ((st = lbk_cl_check(err, "creating an OpenCL program")) != LBK_OK)
        goto cleanup;
    char full_opts[512];
    snprintf(full_opts, sizeof full_opts, "-cl-std=CL1.2 %s", opts);
    err = clBuildProgram(program, 1, &dev->id, full_opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t log_size = 0;
        clGetProgramBuildInfo(program, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
        log = malloc(log_size + 1);
        if (log) {
            clGetProgramBuildInfo(program, dev->id, CL_PROGRAM_BUILD_LOG, log_size, log, NULL);
            log[log_size] = '\0';
        }
        lbk_error("building kernel %s (%s) failed: %s\n%s", file, full_opts,
                  lbk_cl_error_name(err), log ? log : "(no build log)");
        st = LBK_ERR_DEVICE;
        goto cleanup;
    }
    cached_program *slot = &dev->programs[dev->program_count++];
    snprintf(slot->file, sizeof slot->file, "%s", file);
    snprintf(slot->options, sizeof slot->options, "%s", opts);
    slot->program = program;
    *out = program;
    program = NULL;
cleanup:
    if (program)
        clReleaseProgram(program);
    free(source);
    free(log);
    return st;
}

lbk_status lbk_device_kernel(cl_program program, const char *name, cl_kernel *out)
{
    cl_int err;
    *out = clCreateKernel(program, name, &err);
    if (err != CL_SUCCESS) {
        lbk_error("creating kernel %s: OpenCL error %s (%d)", name, lbk_cl_error_name(err), (int)err);
        *out = NULL;
        return LBK_ERR_DEVICE;
    }
    return LBK_OK;
}

lbk_status lbk_device_buffer(lbk_device *dev, cl_mem_flags flags, size_t bytes, void *host,
                             const char *what, cl_mem *out)
{
    cl_int err;
    /* Zero-size buffers are invalid in OpenCL; empty shards still get a
     * valid handle. */
    *out = clCreateBuffer(dev->context, flags, bytes ? bytes : 16, bytes ? host : NULL, &err);
    if (err != CL_SUCCESS) {
        lbk_error("allocating %s (%.1f MiB) on %s: OpenCL error %s", what,
                  (double)bytes / (1024.0 * 1024.0), dev->description, lbk_cl_error_name(err));
        *out = NULL;
        return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
                       err == CL_OUT_OF_RESOURCES
                   ? LBK_ERR_NOMEM
                   : LBK_ERR_DEVICE;
    }
    return LBK_OK;
}

lbk_status lbk_kernel_args(cl_kernel kernel, const char *name, int count, ...)
{
    va_list ap;
    lbk_status st = LBK_OK;
    va_start(ap, count);
    for (int i = 0; i < count; i++) {
        size_t size = va_arg(ap, size_t);
        const void *value = va_arg(ap, const void *);
        cl_int err = clSetKernelArg(kernel, (cl_uint)i, size, value);
        if (err != CL_SUCCESS) {
            lbk_error("setting argument %d of kernel %s: OpenCL error %s", i, name,
                      lbk_cl_error_name(err));
            st = LBK_ERR_DEVICE;
            break;
        }
    }
    va_end(ap);
    return st;
}
