/* Fuzz target for the binary formats: fvecs, ivecs, bvecs and IDX points
 * (plain, or gzip-compressed by the harness so that the fuzzer need not
 * find valid deflate streams), NumPy .npy and big-ann .fbin/.u8bin/.i8bin
 * points, and ivecs / IDX / .npy / .ibin label files.
 *
 * Byte 0 picks the format, byte 1 a shard; the rest is the file. */
#include "fuzz_check.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

static void write_gzip(const char *path, const uint8_t *data, size_t size)
{
    gzFile gz = gzopen(path, "wb");
    if (!gz || (size > 0 && gzwrite(gz, data, (unsigned)size) != (int)size) ||
        gzclose(gz) != Z_OK)
        lbk_fuzz_fail("cannot write the gzip scratch file");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const uint8_t mode = data[0] % 13, shard = data[1];
    data += 2;
    size -= 2;

    static const struct {
        const char *name;
        lbk_format format;
    } labels[4] = {{"in.ivecs", LBK_FORMAT_IVECS},
                   {"in-ubyte", LBK_FORMAT_IDX},
                   {"in-labels.npy", LBK_FORMAT_NPY},
                   {"in-labels.ibin", LBK_FORMAT_IBIN}};
    const int label_mode = mode == 5 ? 0 : mode == 6 ? 1 : mode == 11 ? 2 : mode == 12 ? 3 : -1;
    if (label_mode >= 0) {
        const char *path = lbk_fuzz_path(labels[label_mode].name);
        lbk_fuzz_write(path, data, size);
        lbk_fuzz_check_labels(path, labels[label_mode].format, shard);
        return 0;
    }
    static const struct {
        const char *name;
        lbk_format format;
    } files[11] = {{"in.fvecs", LBK_FORMAT_FVECS}, {"in.ivecs", LBK_FORMAT_IVECS},
                   {"in.bvecs", LBK_FORMAT_BVECS}, {"in-ubyte", LBK_FORMAT_IDX},
                   {"in.idx.gz", LBK_FORMAT_IDX},  {NULL, LBK_FORMAT_AUTO},
                   {NULL, LBK_FORMAT_AUTO},        {"in.npy", LBK_FORMAT_NPY},
                   {"in.fbin", LBK_FORMAT_FBIN},   {"in.u8bin", LBK_FORMAT_U8BIN},
                   {"in.i8bin", LBK_FORMAT_I8BIN}};
    lbk_job_input_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.path, sizeof spec.path, "%s", lbk_fuzz_path(files[mode].name));
    spec.format = files[mode].format;
    spec.label_column = -1;
    spec.target_column = -1;
    spec.delimiter = ',';
    spec.header = -1;
    if (mode == 4)
        write_gzip(spec.path, data, size);
    else
        lbk_fuzz_write(spec.path, data, size);
    lbk_fuzz_check_source(&spec, shard);
    return 0;
}
