/* The width of a data set's points: the types a file's values have, the
 * one a read keeps (reference.type), and the widening to float32 that the
 * doors searching float32 only call (docs/design.md "Compact reference
 * points"). */
#include "dataset_read.h"

#include "alloc_large.h"
#include "format_io.h"
#include "log.h"
#include "try.h"

#include <math.h>
#include <string.h>

size_t lbk_dataset_type_bytes(lbk_dtype type)
{
    switch (type) {
    case LBK_DTYPE_FLOAT32: return 4;
    case LBK_DTYPE_FLOAT16: return 2;
    case LBK_DTYPE_UINT8:
    case LBK_DTYPE_INT8: return 1;
    default: return 0;
    }
}

float lbk_dataset_half_to_float(uint16_t bits)
{
    const int exponent = bits >> 10 & 0x1f;
    const float mantissa = (float)(bits & 0x3ff);
    const float v = exponent == 0    ? ldexpf(mantissa, -24)
                    : exponent == 31 ? (bits & 0x3ff ? NAN : INFINITY)
                                     : ldexpf(mantissa + 1024.0f, exponent - 25);
    return bits & 0x8000 ? -v : v;
}

lbk_status lbk_dataset_file_type(const char *path, const char *dataset, lbk_format format,
                                 lbk_dtype *out)
{
    switch (format) {
    case LBK_FORMAT_BVECS:
    case LBK_FORMAT_U8BIN: *out = LBK_DTYPE_UINT8; return LBK_OK;
    case LBK_FORMAT_I8BIN: *out = LBK_DTYPE_INT8; return LBK_OK;
    case LBK_FORMAT_IDX: return lbk_idx_dtype(path, out);
    case LBK_FORMAT_NPY: return lbk_npy_dtype(path, out);
    case LBK_FORMAT_HDF5: return lbk_hdf5_dtype(path, dataset, out);
    default: *out = LBK_DTYPE_FLOAT32; return LBK_OK;
    }
}

lbk_status lbk_dataset_resolve_type(const char *path, lbk_dtype asked, lbk_dtype file_type,
                                    lbk_dtype *out)
{
    *out = asked == LBK_DTYPE_AUTO ? file_type : asked;
    LBK_FAIL_IF(*out != LBK_DTYPE_FLOAT32 && *out != file_type, LBK_ERR_INPUT,
                "%s: reference.type is %s, but the file's values read as %s; give "
                "reference.type: auto or float32",
                path, lbk_dtype_name(asked), lbk_dtype_name(file_type));
    return LBK_OK;
}

void lbk_dataset_values_to_float(lbk_dtype type, const void *values, uint64_t first,
                                 uint64_t count, float *out)
{
    if (type == LBK_DTYPE_UINT8) {
        const uint8_t *v = (const uint8_t *)values + first;
        for (uint64_t i = 0; i < count; i++)
            out[i] = (float)v[i];
    } else if (type == LBK_DTYPE_INT8) {
        const int8_t *v = (const int8_t *)values + first;
        for (uint64_t i = 0; i < count; i++)
            out[i] = (float)v[i];
    } else {
        const uint16_t *v = (const uint16_t *)values + first;
        for (uint64_t i = 0; i < count; i++)
            out[i] = lbk_dataset_half_to_float(v[i]);
    }
}

lbk_status lbk_dataset_widen(lbk_dataset *data)
{
    if (data->dtype == LBK_DTYPE_FLOAT32)
        return LBK_OK;
    const uint64_t n = data->rows * (uint64_t)data->dim;
    float *points = NULL;
    LBK_TRY(lbk_fmt_alloc((void **)&points, n, sizeof *points));
    lbk_dataset_values_to_float(data->dtype, data->raw, 0, n, points);
    lbk_alloc_large_free(data->raw);
    data->raw = NULL;
    data->points = points;
    data->dtype = LBK_DTYPE_FLOAT32;
    return LBK_OK;
}
