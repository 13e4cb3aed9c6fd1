/* Fuzz target for the binary formats: fvecs, ivecs, bvecs and IDX points
 * (plain, or gzip-compressed by the harness so that the fuzzer need not
 * find valid deflate streams), and ivecs / IDX label files.
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
    const uint8_t mode = data[0] % 7, shard = data[1];
    data += 2;
    size -= 2;

    if (mode == 5 || mode == 6) {
        const char *path = lbk_fuzz_path(mode == 5 ? "in.ivecs" : "in-ubyte");
        lbk_fuzz_write(path, data, size);
        lbk_fuzz_check_labels(path, mode == 5 ? LBK_FORMAT_IVECS : LBK_FORMAT_IDX, shard);
        return 0;
    }
    static const struct {
        const char *name;
        lbk_format format;
    } files[5] = {{"in.fvecs", LBK_FORMAT_FVECS},
                  {"in.ivecs", LBK_FORMAT_IVECS},
                  {"in.bvecs", LBK_FORMAT_BVECS},
                  {"in-ubyte", LBK_FORMAT_IDX},
                  {"in.idx.gz", LBK_FORMAT_IDX}};
    lbk_input_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.path, sizeof spec.path, "%s", lbk_fuzz_path(files[mode].name));
    spec.format = files[mode].format;
    spec.label_column = -1;
    spec.delimiter = ',';
    spec.header = -1;
    if (mode == 4)
        write_gzip(spec.path, data, size);
    else
        lbk_fuzz_write(spec.path, data, size);
    lbk_fuzz_check_source(&spec, shard);
    return 0;
}
