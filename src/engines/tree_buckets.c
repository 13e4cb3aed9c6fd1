#include "tree_buckets.h"

#include "dataset.h"
#include "lbk_shared.h"
#include "try.h"

static uint64_t tile_count(uint64_t n)
{
    return ((uint64_t)1 << lbk_tq_bucket_level(n)) + lbk_tq_two_tile_buckets(n);
}

uint64_t lbk_tree_buckets_bytes(uint64_t n, int dim, lbk_dtype type)
{
    if (n == 0)
        return 0;
    return tile_count(n) * LBK_TREE_TILE_LANES *
           ((uint64_t)dim * lbk_dataset_type_bytes(type) + 4u);
}

const char *lbk_tree_buckets_program_options(lbk_dtype type)
{
    switch (type) {
    case LBK_DTYPE_UINT8: return "-DLBK_TREE_REF=1";
    case LBK_DTYPE_INT8: return "-DLBK_TREE_REF=2";
    case LBK_DTYPE_FLOAT16: return "-DLBK_TREE_REF=3";
    default: return "";
    }
}

lbk_status lbk_tree_buckets_make(lbk_device *dev, cl_mem points, cl_mem ids, uint64_t n, int dim,
                                 lbk_dtype type, lbk_tree_buckets *out)
{
    lbk_status st = LBK_OK;
    cl_kernel layout = NULL;
    const cl_ulong cn = n, twos = lbk_tq_two_tile_buckets(n);
    const cl_int cdim = dim;
    const size_t lanes = (size_t)(tile_count(n) * LBK_TREE_TILE_LANES);
    out->level = lbk_tq_bucket_level(n);
    out->two_tile_buckets = twos;
    cl_program program;
    LBK_TRY_GOTO(st, lbk_device_program_kept(dev, "tree_query.cl",
                                             lbk_tree_buckets_program_options(type), &program));
    LBK_TRY_GOTO(st, lbk_device_kernel(program, "tq_bucket_layout", &layout));
    LBK_TRY_GOTO(st, lbk_device_buffer(dev, CL_MEM_READ_WRITE,
                                       lanes * (size_t)dim * lbk_dataset_type_bytes(type), NULL,
                                       "tree query buckets", &out->points));
    LBK_TRY_GOTO(st, lbk_device_buffer(dev, CL_MEM_READ_WRITE, lanes * 4u, NULL,
                                       "tree query bucket ids", &out->ids));
    LBK_TRY_GOTO(st, LBK_KERNEL_ARGS(layout, LBK_ARG(points), LBK_ARG(ids), LBK_ARG(cn),
                                     LBK_ARG(cdim), LBK_ARG(out->level), LBK_ARG(twos),
                                     LBK_ARG(out->points), LBK_ARG(out->ids)));
    /* One work-item per lane of two tiles per bucket. */
    size_t global = (size_t)(((uint64_t)1 << out->level) * 2u * LBK_TREE_TILE_LANES);
    LBK_TRY_GOTO(st,
                 lbk_device_cl_check(clEnqueueNDRangeKernel(lbk_device_queue(dev), layout, 1,
                                                            NULL, &global, NULL, 0, NULL, NULL),
                                     "laying out the tree query's buckets"));
cleanup:
    if (layout)
        clReleaseKernel(layout);
    if (st != LBK_OK)
        lbk_tree_buckets_release(out);
    return st;
}

void lbk_tree_buckets_release(lbk_tree_buckets *buckets)
{
    if (buckets->points)
        clReleaseMemObject(buckets->points);
    if (buckets->ids)
        clReleaseMemObject(buckets->ids);
    buckets->points = NULL;
    buckets->ids = NULL;
}
