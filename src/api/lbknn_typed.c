/* The typed doors (lbknn_index_build_typed, the _typed searches): compact
 * points kept compact where `lbknn run` would keep a file of their type,
 * by the same decisions (lbk_compact_why here, the index's plan at its
 * creation), and typed queries widened to the float32 rows every search
 * takes (docs/design.md "Compact reference points"). */
#include "lbknn_impl.h"

#include "alloc_large.h"
#include "compact.h"
#include "log.h"
#include "try.h"

#include <string.h>

lbk_status lbk_api_dtype(lbknn_dtype type, lbk_dtype *out)
{
    switch (type) {
    case LBKNN_DTYPE_FLOAT32: *out = LBK_DTYPE_FLOAT32; return LBK_OK;
    case LBKNN_DTYPE_UINT8: *out = LBK_DTYPE_UINT8; return LBK_OK;
    case LBKNN_DTYPE_INT8: *out = LBK_DTYPE_INT8; return LBK_OK;
    case LBKNN_DTYPE_FLOAT16: *out = LBK_DTYPE_FLOAT16; return LBK_OK;
    }
    lbk_error("type = %d: expected LBKNN_DTYPE_FLOAT32, _UINT8, _INT8 or _FLOAT16", (int)type);
    return LBK_ERR_USAGE;
}

lbknn_dtype lbknn_index_dtype(const lbknn_index *ix)
{
    switch (ix && ix->index ? lbk_index_dtype(ix->index) : LBK_DTYPE_FLOAT32) {
    case LBK_DTYPE_UINT8: return LBKNN_DTYPE_UINT8;
    case LBK_DTYPE_INT8: return LBKNN_DTYPE_INT8;
    case LBK_DTYPE_FLOAT16: return LBKNN_DTYPE_FLOAT16;
    default: return LBKNN_DTYPE_FLOAT32;
    }
}

/* Every binary16 with the largest exponent is an infinity or a NaN. */
static lbk_status check_half(const char *what, const uint16_t *v, uint64_t n, int dim)
{
    for (uint64_t i = 0; i < n; i++)
        LBK_FAIL_IF((v[i] & 0x7c00) == 0x7c00, LBK_ERR_INPUT,
                    "%s[%llu][%llu] = %g: not a finite number (NaN or infinity)", what,
                    (unsigned long long)(i / (uint64_t)dim),
                    (unsigned long long)(i % (uint64_t)dim),
                    (double)lbk_dataset_half_to_float(v[i]));
    return LBK_OK;
}

lbk_status lbk_api_check_type(const lbknn_index *ix)
{
    const lbk_dtype asked = ix->options.reference.type;
    LBK_FAIL_IF(asked != LBK_DTYPE_AUTO && asked != LBK_DTYPE_FLOAT32 && asked != ix->type,
                LBK_ERR_INPUT,
                "reference.type is %s, but the points passed are %s; give reference.type: "
                "auto, float32 or %s",
                lbk_dtype_name(asked), lbk_dtype_name(ix->type), lbk_dtype_name(ix->type));
    return LBK_OK;
}

lbk_status lbk_api_shard_compact(const lbknn_index *ix, lbk_dtype type, const void *points,
                                 lbk_dataset *shard)
{
    const lbk_dtype asked = ix->options.reference.type;
    const uint64_t n = shard->rows * (uint64_t)shard->dim;
    const size_t bytes = lbk_dataset_type_bytes(type);
    lbk_status st = LBK_OK;
    shard->dtype = type;
    shard->raw = lbk_alloc_large_logged(n, bytes, "reference points", &st);
    LBK_TRY(st);
    if (n)
        memcpy(shard->raw, points, (size_t)n * bytes);
    if (type == LBK_DTYPE_FLOAT16)
        LBK_TRY(check_half("points", shard->raw, n, shard->dim));
    /* As `lbknn run` reads a file of the type: float32 widens quietly. */
    const char *why = lbk_compact_why(ix->options.knn.metric, type);
    if (asked != LBK_DTYPE_FLOAT32 && why && ix->context->comm.rank == 0)
        lbk_info("%s reference points widened to float32: %s", lbk_dtype_name(type), why);
    if (asked == LBK_DTYPE_FLOAT32 || why)
        return lbk_dataset_widen(shard);
    return LBK_OK;
}

lbk_status lbk_api_queries_widen(const lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                 const void *points, lbk_api_queries *out)
{
    *out = (lbk_api_queries){0};
    if (type == LBKNN_DTYPE_FLOAT32) {
        out->points = points;
        return LBK_OK;
    }
    lbk_dtype t = LBK_DTYPE_FLOAT32;
    LBK_TRY(lbk_api_dtype(type, &t));
    LBK_FAIL_IF(t != ix->type, LBK_ERR_USAGE,
                "queries of type %s for an index built from %s points: pass %s or float32 "
                "queries",
                lbk_dtype_name(t), lbk_dtype_name(ix->type), lbk_dtype_name(ix->type));
    if (queries <= 0 || !points) /* the call's own checks say what is wrong */
        return LBK_OK;
    const uint64_t n = (uint64_t)queries * (uint64_t)ix->dim;
    if (t == LBK_DTYPE_FLOAT16)
        LBK_TRY(check_half("queries", points, n, ix->dim));
    /* A copy at the type's width, widened by the readers' own function
     * (which frees what it widens: never the caller's array). */
    lbk_dataset rows = {.rows = (uint64_t)queries, .dim = ix->dim, .dtype = t};
    lbk_status st = LBK_OK;
    rows.raw = lbk_alloc_large_logged(n, lbk_dataset_type_bytes(t), "queries", &st);
    if (st == LBK_OK) {
        memcpy(rows.raw, points, (size_t)n * lbk_dataset_type_bytes(t));
        st = lbk_dataset_widen(&rows);
    }
    if (st == LBK_OK) {
        out->owned = rows.points; /* taken */
        out->points = rows.points;
        rows.points = NULL;
    }
    lbk_dataset_free(&rows);
    return st;
}

void lbk_api_queries_free(lbk_api_queries *q)
{
    lbk_alloc_large_free(q->owned);
    *q = (lbk_api_queries){0};
}

lbk_status lbk_api_widen_for_radius(const lbknn_index *ix)
{
    return lbk_index_widen(ix->index, &ix->tuning, lbk_index_compact_why(ix->index, true));
}
