#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[64];
static char path_buf[256];

static void remove_scratch(void)
{
    static const char *const names[] = {"job.yaml", "round-trip.yaml", "in.csv",   "in.fvecs",
                                        "in.ivecs", "in.bvecs",        "in-ubyte", "in.idx.gz",
                                        "in.txt",   "labels.csv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path_buf, sizeof path_buf, "%s/%s", scratch, names[i]);
        unlink(path_buf);
    }
    rmdir(scratch);
}

const char *lbk_fuzz_path(const char *name)
{
    if (!scratch[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/lbkfuzz.XXXXXX",
                 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
        if (!mkdtemp(scratch))
            lbk_fuzz_fail("cannot create the scratch directory");
        atexit(remove_scratch);
    }
    snprintf(path_buf, sizeof path_buf, "%s/%s", scratch, name);
    return path_buf;
}

void lbk_fuzz_write(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        lbk_fuzz_fail("cannot write the scratch file");
}

void lbk_fuzz_fail(const char *what)
{
    fprintf(stderr, "lbk fuzz invariant violated: %s\n", what);
    abort();
}
