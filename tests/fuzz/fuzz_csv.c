/* Fuzz target for delimited text: CSV points (optionally with a label
 * column) and text/CSV label files.
 *
 * Byte 0: bits 0-2 the delimiter, bits 3-4 the header mode, bits 5-7 the
 * label column. Byte 1: bit 0 points or a label file, bit 1 the label file
 * format (text or csv). Byte 2 picks a shard. The rest is the file. */
#include "fuzz_check.h"
#include "fuzz_util.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char delimiters[8] = {',', ';', '\t', ' ', '|', ',', ':', '/'};
    static const int label_columns[8] = {-1, -1, 0, 1, 2, 3, 1000, INT_MAX};
    if (size < 3)
        return 0;
    const uint8_t spec_byte = data[0], mode = data[1], shard = data[2];
    data += 3;
    size -= 3;

    if (mode & 1) {
        const bool csv = mode & 2;
        const char *path = lbk_fuzz_path(csv ? "labels.csv" : "in.txt");
        lbk_fuzz_write(path, data, size);
        lbk_fuzz_check_labels(path, csv ? LBK_FORMAT_CSV : LBK_FORMAT_TEXT, shard);
        return 0;
    }
    lbk_job_input_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.path, sizeof spec.path, "%s", lbk_fuzz_path("in.csv"));
    spec.format = LBK_FORMAT_CSV;
    spec.delimiter = delimiters[spec_byte & 7];
    spec.header = ((spec_byte >> 3) & 3) % 3 - 1;
    spec.label_column = label_columns[spec_byte >> 5];
    spec.target_column = -1;
    lbk_fuzz_write(spec.path, data, size);
    lbk_fuzz_check_source(&spec, shard);
    return 0;
}
