/* The k-d tree over compact points (uint8, int8, float16): the shard
 * widened to float32 on the device for the builders, and the built tree's
 * points narrowed back, exactly (docs/design.md "Compact reference
 * points"), by the type-specific program of kernels/tree_query.cl. */
#include "kdtree_build_impl.h"

#include "log.h"
#include "tree_buckets.h"
#include "try.h"

/* One kernel of the tree's type-specific program (kernels/tree_query.cl)
 * over `count` values: in to out. */
static lbk_status convert_values(lbk_device *dev, lbk_dtype type, const char *name, cl_mem in,
                                 uint64_t count, cl_mem out)
{
    lbk_status st = LBK_OK;
    cl_program program;
    cl_kernel kernel = NULL;
    const cl_ulong ccount = count;
    size_t local = 256, global = lbk_device_round_up((size_t)count, local);
    LBK_TRY(lbk_device_program_kept(dev, "tree_query.cl", lbk_tree_buckets_program_options(type),
                                    &program));
    LBK_TRY(lbk_device_kernel(program, name, &kernel));
    LBK_TRY_GOTO(st, LBK_KERNEL_ARGS(kernel, LBK_ARG(in), LBK_ARG(ccount), LBK_ARG(out)));
    LBK_TRY_GOTO(st,
                 lbk_device_cl_check(clEnqueueNDRangeKernel(lbk_device_queue(dev), kernel, 1,
                                                            NULL, &global, &local, 0, NULL, NULL),
                                     name));
    st = lbk_device_cl_check(clFinish(lbk_device_queue(dev)), name);
cleanup:
    clReleaseKernel(kernel);
    return st;
}

/* Compact points: the builders sort a float32 copy made on the device (the
 * values convert exactly, so keys and splits are the exact values'), never
 * on the host; the compact upload is released once widened. */
lbk_status lbk_kdtree_compact_widen(lbk_device *dev, const lbk_dataset *reference, cl_mem *wide,
                                    uint64_t *peak)
{
    const uint64_t count = reference->rows * (uint64_t)reference->dim;
    const size_t raw_bytes = (size_t)count * lbk_dataset_type_bytes(reference->dtype);
    cl_mem raw = NULL;
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, raw_bytes,
                              reference->raw, "k-d tree compact points", &raw));
    lbk_status st = lbk_device_buffer(dev, CL_MEM_READ_WRITE, (size_t)count * sizeof(float), NULL,
                                      "k-d tree points", wide);
    if (st == LBK_OK)
        st = convert_values(dev, reference->dtype, "tq_widen", raw, count, *wide);
    clReleaseMemObject(raw);
    if (st != LBK_OK && *wide) {
        clReleaseMemObject(*wide);
        *wide = NULL;
    }
    *peak = raw_bytes + count * sizeof(float);
    return st;
}

lbk_status lbk_kdtree_compact_narrow(lbk_device *dev, lbk_dtype type, cl_mem points,
                                     uint64_t count, cl_mem *out)
{
    const size_t bytes = (size_t)(count * lbk_dataset_type_bytes(type));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_WRITE, bytes, NULL, "k-d tree points", out));
    const lbk_status st = convert_values(dev, type, "tq_narrow", points, count, *out);
    if (st != LBK_OK) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    return st;
}
