#include "kdtree_select.h"

#include "lbk_shared.h"
#include "log.h"
#include "timer.h"
#include "try.h"

#include <stdio.h>
#include <stdlib.h>

#define KD_SEL_DIM_MAX 8

uint64_t lbk_kdtree_select_bytes(uint64_t n, int dim)
{
    /* The work array's two copies (points and rows) and the tree. */
    return 3 * (n * (uint64_t)dim * sizeof(float) + n * sizeof(uint32_t));
}

typedef struct {
    lbk_device *dev;
    cl_command_queue queue;
    cl_kernel init, level, subtree;
    cl_mem work[2], rows[2]; /* the work array's two copies (kd_sel_node) */
    uint64_t n;
    cl_int dim;
    cl_uint levels;
    cl_uint rotation; /* the root's dimension (kdtree.h) */
    bool profile;
} select_build;

static lbk_status launch(select_build *b, cl_kernel k, uint64_t items, const char *what)
{
    size_t g = (size_t)items, local = 1;
    const double t0 = b->profile ? lbk_timer_now() : 0.0;
    cl_int err = clEnqueueNDRangeKernel(b->queue, k, 1, NULL, &g, &local, 0, NULL, NULL);
    if (err == CL_SUCCESS && b->profile) {
        err = clFinish(b->queue);
        fprintf(stderr, "kdtree profile: %-24s %.4f s\n", what, lbk_timer_now() - t0);
    }
    if (err != CL_SUCCESS) {
        lbk_error("k-d tree build: launching %s over %zu work-items: OpenCL error %s", what, g,
                  lbk_device_cl_error_name(err));
        return LBK_ERR_DEVICE;
    }
    return LBK_OK;
}

/* Levels one node per work-item while the subtrees are larger than
 * segment_max, then every subtree in one launch. */
static lbk_status run_levels(select_build *b, uint64_t segment_max, lbk_kdtree_select_tree *out)
{
    for (cl_uint l = 0; l < b->levels; l++) {
        const uint64_t first = ((uint64_t)1 << l) - 1;
        const uint64_t nodes = b->n - first < first + 1 ? b->n - first : first + 1;
        const bool whole =
            lbk_kd_subtree_size(first, b->n, b->levels) <= segment_max || l + 1 == b->levels;
        cl_kernel k = whole ? b->subtree : b->level;
        LBK_TRY(LBK_KERNEL_ARGS(k, LBK_ARG(b->work[0]), LBK_ARG(b->rows[0]), LBK_ARG(b->work[1]),
                                LBK_ARG(b->rows[1]), LBK_ARG(b->dim), LBK_ARG(b->n),
                                LBK_ARG(b->levels), LBK_ARG(l), LBK_ARG(b->rotation),
                                LBK_ARG(out->points), LBK_ARG(out->ids)));
        char what[48];
        snprintf(what, sizeof what, "%s %u", whole ? "kd_sel_subtree from" : "kd_sel_level", l);
        LBK_TRY(launch(b, k, nodes, what));
        if (whole)
            break;
    }
    return lbk_device_cl_check(clFinish(b->queue), "finishing the k-d tree build");
}

static lbk_status make_kernels(select_build *b)
{
    /* Built for the dimension (up to 8), so that the loops over it unroll. */
    char options[32] = "";
    if (b->dim <= KD_SEL_DIM_MAX)
        snprintf(options, sizeof options, "-DKD_SEL_DIM=%d", (int)b->dim);
    cl_program program;
    LBK_TRY(lbk_device_program_kept(b->dev, "kdtree_select.cl", options, &program));
    LBK_TRY(lbk_device_kernel(program, "kd_sel_init", &b->init));
    LBK_TRY(lbk_device_kernel(program, "kd_sel_level", &b->level));
    return lbk_device_kernel(program, "kd_sel_subtree", &b->subtree);
}

static lbk_status alloc_and_init(select_build *b, const lbk_dataset *ref,
                                 lbk_kdtree_select_tree *out)
{
    const size_t pts = (size_t)b->n * (size_t)b->dim * sizeof(float);
    const size_t rows = (size_t)b->n * sizeof(uint32_t);
    if (!b->work[0])
        LBK_TRY(lbk_device_buffer(b->dev, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, pts,
                                  (void *)ref->points, "k-d tree work points", &b->work[0]));
    LBK_TRY(lbk_device_buffer(b->dev, CL_MEM_READ_WRITE, pts, NULL, "k-d tree work points",
                              &b->work[1]));
    for (int i = 0; i < 2; i++)
        LBK_TRY(lbk_device_buffer(b->dev, CL_MEM_READ_WRITE, rows, NULL, "k-d tree work rows",
                                  &b->rows[i]));
    LBK_TRY(
        lbk_device_buffer(b->dev, CL_MEM_READ_WRITE, pts, NULL, "k-d tree points", &out->points));
    LBK_TRY(
        lbk_device_buffer(b->dev, CL_MEM_READ_WRITE, rows, NULL, "k-d tree row ids", &out->ids));
    LBK_TRY(LBK_KERNEL_ARGS(b->init, LBK_ARG(b->rows[0]), LBK_ARG(b->n)));
    size_t g = (size_t)lbk_device_round_up((size_t)b->n, 256), local = 256;
    return lbk_device_cl_check(
        clEnqueueNDRangeKernel(b->queue, b->init, 1, NULL, &g, &local, 0, NULL, NULL),
        "launching kd_sel_init");
}

lbk_status lbk_kdtree_select_build(lbk_device *dev, const lbk_dataset *reference, cl_mem wide,
                                   uint64_t segment_max, int rotation, bool profile,
                                   lbk_kdtree_select_tree *out)
{
    lbk_status st = LBK_OK;
    select_build b = {.dev = dev,
                      .work = {wide, NULL},
                      .queue = lbk_device_queue(dev),
                      .n = reference->rows,
                      .dim = reference->dim,
                      .levels = lbk_kd_levels(reference->rows),
                      .rotation = (cl_uint)rotation,
                      .profile = profile};
    *out = (lbk_kdtree_select_tree){0};
    const double t_prog = lbk_timer_now();
    LBK_TRY_GOTO(st, make_kernels(&b));
    if (b.profile)
        fprintf(stderr, "kdtree profile: %-24s %.4f s\n", "program and kernels",
                lbk_timer_now() - t_prog);
    LBK_TRY_GOTO(st, alloc_and_init(&b, reference, out));
    LBK_TRY_GOTO(st, run_levels(&b, segment_max, out));
    out->peak_bytes = lbk_kdtree_select_bytes(b.n, b.dim);
    /* Per level: two passes reading the keys (4 bytes of each point's
     * cache line) and one moving each point and row to the other copy. */
    out->moved = (uint64_t)b.levels * b.n * (8 + 2 * ((uint64_t)b.dim * 4 + 4));
cleanup:
    if (st != LBK_OK) {
        if (out->points)
            clReleaseMemObject(out->points);
        if (out->ids)
            clReleaseMemObject(out->ids);
        *out = (lbk_kdtree_select_tree){0};
    }
    const cl_kernel kernels[3] = {b.init, b.level, b.subtree};
    for (int i = 0; i < 3; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
    for (int i = 0; i < 2; i++) {
        if (b.work[i])
            clReleaseMemObject(b.work[i]);
        if (b.rows[i])
            clReleaseMemObject(b.rows[i]);
    }
    return st;
}
