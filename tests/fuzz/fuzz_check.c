#include "fuzz_check.h"

#include "alloc_large.h"
#include "format_io.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void lbk_fuzz_pick_shard(uint8_t byte, uint64_t rows, uint64_t *lo, uint64_t *hi)
{
    uint64_t a = rows * (byte & 0x0f) / 15;
    uint64_t b = rows * (byte >> 4) / 15;
    *lo = a < b ? a : b;
    *hi = a < b ? b : a;
}

void lbk_fuzz_check_source(const lbk_job_input_spec *spec, uint8_t shard_byte)
{
    lbk_dataset_info info;
    lbk_dataset whole = {0}, shard = {0};
    if (lbk_dataset_probe(spec, &info) != LBK_OK)
        return;
    if (info.rows == 0 || info.dim <= 0)
        lbk_fuzz_fail("a probe accepted a source without rows or dimension");
    /* Every value takes at least a byte of the file, or 1/1032 of one in a
     * deflate stream: a probe that promises more believed a lying header,
     * and the reader would allocate for it. */
    struct stat sb;
    if (stat(spec->path, &sb) != 0)
        lbk_fuzz_fail("cannot stat the scratch file");
    if ((double)info.rows * info.dim > 1100.0 * ((double)sb.st_size + 1.0))
        lbk_fuzz_fail("a probe promises more values than the file can hold");
    if (lbk_dataset_read(spec, 0, info.rows, &whole) != LBK_OK)
        return;
    if (whole.rows != info.rows || whole.dim != info.dim ||
        (whole.labels != NULL) != info.has_labels)
        lbk_fuzz_fail("the whole read disagrees with the probe");
    const uint64_t n = whole.rows * (uint64_t)whole.dim;
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(whole.points[i]))
            lbk_fuzz_fail("a read accepted a non-finite value");
    for (uint64_t i = 0; whole.labels && i < whole.rows; i++)
        if (whole.labels[i] < 0)
            lbk_fuzz_fail("a read accepted a negative label");

    uint64_t lo = 0, hi = 0;
    lbk_fuzz_pick_shard(shard_byte, info.rows, &lo, &hi);
    if (lbk_dataset_read(spec, lo, hi, &shard) != LBK_OK)
        lbk_fuzz_fail("a shard of a readable source fails to read");
    if (shard.rows != hi - lo || shard.dim != whole.dim || shard.first_row != lo)
        lbk_fuzz_fail("the shard has the wrong shape");
    const size_t row_bytes = (size_t)whole.dim * sizeof(float);
    if (hi > lo && memcmp(shard.points, whole.points + lo * (uint64_t)whole.dim,
                          (size_t)(hi - lo) * row_bytes) != 0)
        lbk_fuzz_fail("the shard's points differ from the whole read");
    if (hi > lo && whole.labels &&
        memcmp(shard.labels, whole.labels + lo, (size_t)(hi - lo) * sizeof(int32_t)) != 0)
        lbk_fuzz_fail("the shard's labels differ from the whole read");
    lbk_dataset_free(&shard);
    lbk_dataset_free(&whole);
}

void lbk_fuzz_check_labels(const char *path, lbk_format format, uint8_t shard_byte)
{
    uint64_t rows = 0;
    int32_t *whole = NULL, *part = NULL;
    if (lbk_labels_probe(path, format, &rows) != LBK_OK)
        goto cleanup;
    if (lbk_fmt_alloc((void **)&whole, rows, sizeof *whole) != LBK_OK)
        goto cleanup;
    if (rows == 0 || lbk_labels_read(path, format, 0, rows, whole) != LBK_OK)
        goto cleanup;
    for (uint64_t i = 0; i < rows; i++)
        if (whole[i] < 0)
            lbk_fuzz_fail("a label read accepted a negative label");
    uint64_t lo = 0, hi = 0;
    lbk_fuzz_pick_shard(shard_byte, rows, &lo, &hi);
    if (lo == hi)
        goto cleanup; /* the label readers take lo < hi only */
    if (lbk_fmt_alloc((void **)&part, hi - lo, sizeof *part) != LBK_OK)
        goto cleanup;
    if (lbk_labels_read(path, format, lo, hi, part) != LBK_OK)
        lbk_fuzz_fail("a shard of a readable label file fails to read");
    if (memcmp(part, whole + lo, (size_t)(hi - lo) * sizeof *part) != 0)
        lbk_fuzz_fail("the shard's labels differ from the whole read");
cleanup:
    lbk_alloc_large_free(part);
    lbk_alloc_large_free(whole);
}
