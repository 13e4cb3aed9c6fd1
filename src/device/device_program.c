/* The device's programs: built from the embedded kernels (with the header
 * they share with the host), kept per device by file and options, and
 * kept between processes in the program cache when one is named. */
#include "device_impl.h"

#include "embedded_kernels.h"
#include "log.h"
#include "program_cache.h"
#include "try.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compiler warnings are for the kernels' developers: -w keeps them out of
 * the build log and off the terminal (some OpenCL compilers print "N
 * warnings generated." on stderr themselves). */
static atomic_bool show_compiler_warnings = false; /* set by `lbknn`, read by any thread */

void lbk_device_show_compiler_warnings(bool show) { show_compiler_warnings = show; }

void lbk_device_set_program_cache(lbk_device *dev, const char *dir)
{
    const int n = snprintf(dev->program_cache, sizeof dev->program_cache, "%s", dir ? dir : "");
    if (n < 0 || (size_t)n >= sizeof dev->program_cache)
        dev->program_cache[0] = '\0';
}

static const lbk_device_cached_program *find_cached(const lbk_device *dev, const char *name,
                                                    const char *opts)
{
    for (int i = 0; i < dev->program_count; i++)
        if (strcmp(dev->programs[i].file, name) == 0 &&
            strcmp(dev->programs[i].options, opts) == 0)
            return &dev->programs[i];
    return NULL;
}

/* The program's build log (malloc'd), or NULL. */
static char *build_log(const lbk_device *dev, cl_program program)
{
    size_t log_size = 0;
    clGetProgramBuildInfo(program, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    char *log = malloc(log_size + 1);
    if (log) {
        log[0] = '\0';
        clGetProgramBuildInfo(program, dev->id, CL_PROGRAM_BUILD_LOG, log_size, log, NULL);
        log[log_size] = '\0';
    }
    return log;
}

/* Only with lbk_device_show_compiler_warnings(true), for the kernels'
 * developers. */
static void log_build_warnings(const lbk_device *dev, cl_program program, const char *name)
{
    char *log = build_log(dev, program);
    if (log && strspn(log, " \t\r\n") < strlen(log)) {
        lbk_warn("building kernel %s: the compiler's log follows", name);
        lbk_log_text(log);
    }
    free(log);
}

static void log_build_failure(const lbk_device *dev, cl_program program, const char *name,
                              const char *full_opts, cl_int err)
{
    char *log = build_log(dev, program);
    lbk_error("building kernel %s (%s) failed: %s; the compiler's log follows", name, full_opts,
              lbk_device_cl_error_name(err));
    lbk_log_text(log ? log : "(no build log)");
    free(log);
}

/* Compile `source` with the shared header in front. The header is pasted in
 * rather than #included, because the program is built from memory with no
 * include path. */
static lbk_status build(lbk_device *dev, const char *name, const char *source, const char *opts,
                        bool keep, cl_program *out)
{
    lbk_status st = LBK_OK;
    const lbk_embedded_kernels_file *shared = lbk_embedded_kernels_find("lbk_shared.h");
    LBK_FAIL_IF(!shared, LBK_ERR_INTERNAL, "internal: lbk_shared.h is not embedded");
    const size_t len = shared->length + strlen(name) + strlen(source) + 32;
    char *text = malloc(len);
    LBK_FAIL_IF(!text, LBK_ERR_NOMEM, "out of host memory building %s", name);
    snprintf(text, len, "%s\n#line 1 \"%s\"\n%s", shared->source, name, source);
    const char *src = text;
    cl_int err;
    char full_opts[512];
    snprintf(full_opts, sizeof full_opts, "-cl-std=CL1.2%s %s",
             show_compiler_warnings ? "" : " -w", opts);
    cl_program program = NULL;
    if (keep && lbk_program_cache_load(dev, dev->program_cache, text, full_opts, out))
        goto cleanup;
    program = clCreateProgramWithSource(dev->context, 1, &src, NULL, &err);
    LBK_TRY_GOTO(st, lbk_device_cl_check(err, "creating an OpenCL program"));
    err = clBuildProgram(program, 1, &dev->id, full_opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        log_build_failure(dev, program, name, full_opts, err);
        st = LBK_ERR_DEVICE;
        goto cleanup;
    }
    if (show_compiler_warnings)
        log_build_warnings(dev, program, name);
    if (keep)
        lbk_program_cache_store(dev, dev->program_cache, text, full_opts, program);
    *out = program;
    program = NULL;
cleanup:
    if (program)
        clReleaseProgram(program);
    free(text);
    return st;
}

static lbk_status program_for(lbk_device *dev, const char *name, const char *source,
                              const char *options, bool keep, cl_program *out)
{
    const char *opts = options ? options : "";
    const lbk_device_cached_program *hit = find_cached(dev, name, opts);
    if (hit) {
        *out = hit->program;
        return LBK_OK;
    }
    LBK_FAIL_IF(dev->program_count == LBK_DEVICE_PROGRAMS_MAX || strlen(name) >= 64 ||
                    strlen(opts) >= 256,
                LBK_ERR_INTERNAL,
                "internal: kernel file '%s': too many programs or too long a "
                "name or options",
                name);
    cl_program program;
    LBK_TRY(build(dev, name, source, opts, keep, &program));
    lbk_device_cached_program *slot = &dev->programs[dev->program_count++];
    snprintf(slot->file, sizeof slot->file, "%s", name);
    snprintf(slot->options, sizeof slot->options, "%s", opts);
    slot->program = program;
    *out = program;
    return LBK_OK;
}

lbk_status lbk_device_program_source(lbk_device *dev, const char *name, const char *source,
                                     const char *options, cl_program *out)
{
    return program_for(dev, name, source, options, false, out);
}

lbk_status lbk_device_program(lbk_device *dev, const char *file, const char *options,
                              cl_program *out)
{
    const lbk_embedded_kernels_file *kernel = lbk_embedded_kernels_find(file);
    LBK_FAIL_IF(!kernel, LBK_ERR_INTERNAL, "internal: kernel file '%s' is not embedded", file);
    return program_for(dev, file, kernel->source, options, false, out);
}

lbk_status lbk_device_program_kept(lbk_device *dev, const char *file, const char *options,
                                   cl_program *out)
{
    const lbk_embedded_kernels_file *kernel = lbk_embedded_kernels_find(file);
    LBK_FAIL_IF(!kernel, LBK_ERR_INTERNAL, "internal: kernel file '%s' is not embedded", file);
    return program_for(dev, file, kernel->source, options, true, out);
}

lbk_status lbk_device_kernel(cl_program program, const char *name, cl_kernel *out)
{
    cl_int err;
    *out = clCreateKernel(program, name, &err);
    if (err != CL_SUCCESS) {
        lbk_error("creating kernel %s: OpenCL error %s (%d)", name, lbk_device_cl_error_name(err),
                  (int)err);
        *out = NULL;
        return LBK_ERR_DEVICE;
    }
    return LBK_OK;
}
