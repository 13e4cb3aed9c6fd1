/* The files of a saved index (src/io/saved.h), no device: a file
 * written reads back whole, its manifest line's CRC is zlib's crc32 of the
 * bytes (the independent oracle), and a flipped byte, a truncated or a
 * missing file, or a manifest without the file's line is refused; the
 * manifest's key lookup matches whole keys only. */
#include "lbk_test.h"
#include "saved.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define BYTES 100000

static char dir[256];
static unsigned char data[BYTES], back[BYTES];
static char lines[1024];

/* A fresh directory holding one file "blob" of BYTES seeded bytes. */
static void write_blob(void)
{
    snprintf(dir, sizeof dir, "%s/lbk-saved-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    LBK_ASSERT_TRUE(mkdtemp(dir) != NULL);
    lbk_test_rng rng = LBK_TEST_RNG(7); /* seed 7 */
    for (size_t i = 0; i < BYTES; i++)
        data[i] = (unsigned char)lbk_test_rng_below(&rng, 256);
    size_t used = 0;
    LBK_ASSERT_EQ_INT(lbk_saved_write(dir, "blob", data, BYTES, lines, sizeof lines, &used),
                      LBK_OK);
    LBK_EXPECT_EQ_U64(used, strlen(lines));
}

static void remove_dir(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/blob", dir);
    remove(path);
    rmdir(dir);
}

static void case_round_trip(void)
{
    write_blob();
    char want[128];
    snprintf(want, sizeof want, "file.blob = %d %08lx\n", BYTES, crc32(0, data, BYTES));
    LBK_EXPECT_EQ_STR(lines, want);
    memset(back, 0, sizeof back);
    LBK_EXPECT_EQ_INT(lbk_saved_read(dir, "blob", lines, back, BYTES), LBK_OK);
    LBK_EXPECT_EQ_MEM(back, data, BYTES);
    remove_dir();
}

static void case_refusals(void)
{
    write_blob();
    char path[512];
    snprintf(path, sizeof path, "%s/blob", dir);
    /* One flipped byte. */
    FILE *f = fopen(path, "r+b");
    LBK_ASSERT_TRUE(f != NULL);
    fseek(f, 5000, SEEK_SET);
    fputc(data[5000] ^ 1, f);
    fclose(f);
    LBK_EXPECT_EQ_INT(lbk_saved_read(dir, "blob", lines, back, BYTES), LBK_ERR_INPUT);
    /* Truncated. */
    LBK_ASSERT_EQ_INT(truncate(path, BYTES - 1), 0);
    LBK_EXPECT_EQ_INT(lbk_saved_read(dir, "blob", lines, back, BYTES), LBK_ERR_INPUT);
    /* A size the caller does not expect, no line, a missing file. */
    LBK_EXPECT_EQ_INT(lbk_saved_read(dir, "blob", lines, back, BYTES / 2), LBK_ERR_INPUT);
    LBK_EXPECT_EQ_INT(lbk_saved_read(dir, "other", lines, back, BYTES), LBK_ERR_INPUT);
    remove(path);
    LBK_EXPECT_EQ_INT(lbk_saved_read(dir, "blob", lines, back, BYTES), LBK_ERR_INPUT);
    rmdir(dir);
}

static void case_manifest_keys(void)
{
    const char *m = "format = 1\nr10.rows = 7\nr1.rows = 3\nname = a b\nbad = x1\n";
    char v[16];
    uint64_t n = 0;
    LBK_EXPECT_TRUE(lbk_saved_get_u64(m, "r1.rows", &n));
    LBK_EXPECT_EQ_U64(n, 3);
    LBK_EXPECT_TRUE(lbk_saved_get_u64(m, "r10.rows", &n));
    LBK_EXPECT_EQ_U64(n, 7);
    LBK_EXPECT_FALSE(lbk_saved_get_u64(m, "r2.rows", &n));
    LBK_EXPECT_FALSE(lbk_saved_get_u64(m, "bad", &n));
    LBK_EXPECT_FALSE(lbk_saved_get(m, "r1", v, sizeof v));
    LBK_EXPECT_TRUE(lbk_saved_get(m, "name", v, sizeof v));
    LBK_EXPECT_EQ_STR(v, "a b");
    LBK_EXPECT_FALSE(lbk_saved_get(m, "name", v, 3)); /* does not fit */
}

static const lbk_test_case cases[] = {
    {"round_trip", case_round_trip},
    {"refusals", case_refusals},
    {"manifest_keys", case_manifest_keys},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
