/* Compact points (reference.type): each format that carries uint8, int8 or
 * float16 values read at that width, byte for byte as the fixture wrote
 * them, for any row range; float32 widens them exactly; a type the file
 * does not hold is refused naming the file. The fixtures' bytes are built
 * here, independently of src/. */
#include "cases.h"
#include "testkit.h"

#include "dataset_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 5
#define DIM 3

/* Values every row range is checked against: row r, column j. */
static unsigned char byte_at(int r, int j) { return (unsigned char)(r * 53 + j * 97 + 1); }
/* Binary16 bits of small exact values (1.5, -0.25, 2048, a subnormal, ...). */
static uint16_t half_at(int r, int j)
{
    static const uint16_t v[] = {0x3e00, 0xb400, 0x6800, 0x0001, 0x8000, 0x7bff, 0x3c00, 0xc000};
    return v[(r * DIM + j) % 8];
}
static float half_value(uint16_t bits)
{
    /* An oracle of its own: sign, exponent, mantissa by the standard's formula. */
    const int e = bits >> 10 & 0x1f;
    const double m = bits & 0x3ff;
    double x = e == 0 ? m / 1024.0 / 16384.0 : (1.0 + m / 1024.0) * (double)(1u << e) / 32768.0;
    return (float)(bits & 0x8000 ? -x : x);
}

static lbk_job_input_spec spec_of(const char *path, lbk_dtype type)
{
    lbk_job_input_spec s = tk_spec(path);
    s.type = type;
    return s;
}

/* Every row range [lo, hi) of the file reads as `type`, the raw bytes equal
 * to `want` (rows x DIM values of `bytes` each). */
static void check_raw(const char *path, lbk_dtype type, const void *want, size_t bytes)
{
    const lbk_job_input_spec s = spec_of(path, LBK_DTYPE_AUTO);
    for (uint64_t lo = 0; lo <= ROWS; lo++)
        for (uint64_t hi = lo; hi <= ROWS; hi += 2) {
            lbk_dataset d;
            LBK_ASSERT_EQ_INT(lbk_dataset_read(&s, lo, hi, &d), LBK_OK, "%s", path);
            LBK_EXPECT_EQ_INT(d.dtype, type, "%s", path);
            LBK_EXPECT_TRUE(d.points == NULL, "%s: no float32 copy", path);
            LBK_EXPECT_EQ_U64(d.rows, hi - lo);
            if (hi > lo)
                LBK_EXPECT_TRUE(memcmp(d.raw, (const char *)want + lo * DIM * bytes,
                                       (hi - lo) * DIM * bytes) == 0,
                                "%s rows [%llu, %llu)", path, (unsigned long long)lo,
                                (unsigned long long)hi);
            lbk_dataset_free(&d);
        }
}

/* Read with reference.type float32 (and, after widening, AUTO): the exact
 * float values. */
static void check_widened(const char *path, const float *want)
{
    lbk_job_input_spec s = spec_of(path, LBK_DTYPE_FLOAT32);
    tk_check_ranges(&s, want, NULL, ROWS, DIM);
    s.type = LBK_DTYPE_AUTO;
    lbk_dataset d;
    LBK_ASSERT_EQ_INT(lbk_dataset_read(&s, 0, ROWS, &d), LBK_OK);
    LBK_ASSERT_EQ_INT(lbk_dataset_widen(&d), LBK_OK);
    LBK_EXPECT_TRUE(d.raw == NULL && d.dtype == LBK_DTYPE_FLOAT32);
    for (int i = 0; i < ROWS * DIM; i++)
        LBK_EXPECT_TRUE(d.points[i] == want[i], "%s value %d", path, i);
    lbk_dataset_free(&d);
}

static void fill(unsigned char *u8, float *fu8, float *fi8)
{
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < DIM; j++) {
            u8[r * DIM + j] = byte_at(r, j);
            fu8[r * DIM + j] = (float)byte_at(r, j);
            fi8[r * DIM + j] = (float)(signed char)byte_at(r, j);
        }
}

static void case_bvecs(void)
{
    unsigned char u8[ROWS * DIM];
    float fu8[ROWS * DIM], fi8[ROWS * DIM];
    fill(u8, fu8, fi8);
    tk_bytes w = {0};
    for (int r = 0; r < ROWS; r++) {
        tk_le32(&w, DIM);
        for (int j = 0; j < DIM; j++)
            tk_u8(&w, u8[r * DIM + j]);
    }
    const char *path = tk_path("c.bvecs");
    tk_write_file(path, w.b, w.n);
    tk_free(&w);
    check_raw(path, LBK_DTYPE_UINT8, u8, 1);
    check_widened(path, fu8);
}

static void case_bigann(void)
{
    unsigned char u8[ROWS * DIM];
    float fu8[ROWS * DIM], fi8[ROWS * DIM];
    fill(u8, fu8, fi8);
    const char *names[2] = {"c.u8bin", "c.i8bin"};
    for (int t = 0; t < 2; t++) {
        tk_bytes w = {0};
        tk_le32(&w, ROWS);
        tk_le32(&w, DIM);
        for (int i = 0; i < ROWS * DIM; i++)
            tk_u8(&w, u8[i]);
        const char *path = tk_path(names[t]);
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        check_raw(path, t ? LBK_DTYPE_INT8 : LBK_DTYPE_UINT8, u8, 1);
        check_widened(path, t ? fi8 : fu8);
        /* The explicit type reads alike. */
        const lbk_job_input_spec s = spec_of(path, t ? LBK_DTYPE_INT8 : LBK_DTYPE_UINT8);
        lbk_dataset d;
        LBK_ASSERT_EQ_INT(lbk_dataset_read(&s, 0, ROWS, &d), LBK_OK);
        LBK_EXPECT_TRUE(d.raw && memcmp(d.raw, u8, sizeof u8) == 0);
        lbk_dataset_free(&d);
    }
}

/* IDX ubyte and sbyte, plain and gzip-compressed. */
static void case_idx(void)
{
    unsigned char u8[ROWS * DIM];
    float fu8[ROWS * DIM], fi8[ROWS * DIM];
    fill(u8, fu8, fi8);
    for (int t = 0; t < 2; t++) {
        tk_bytes w = {0};
        tk_be32(&w, (uint32_t)(t ? 0x0902 : 0x0802));
        tk_be32(&w, ROWS);
        tk_be32(&w, DIM);
        for (int i = 0; i < ROWS * DIM; i++)
            tk_u8(&w, u8[i]);
        const char *path = tk_path(t ? "c-sbyte.idx" : "c-ubyte.idx");
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        const lbk_dtype type = t ? LBK_DTYPE_INT8 : LBK_DTYPE_UINT8;
        check_raw(path, type, u8, 1);
        check_widened(path, t ? fi8 : fu8);
        const char *gz = tk_path(t ? "c-sbyte.idx.gz" : "c-ubyte.idx.gz");
        tk_gzip(path, gz);
        check_raw(gz, type, u8, 1);
        check_widened(gz, t ? fi8 : fu8);
    }
}

static void case_npy(void)
{
    unsigned char u8[ROWS * DIM];
    float fu8[ROWS * DIM], fi8[ROWS * DIM];
    fill(u8, fu8, fi8);
    const char *descr[2] = {"|u1", "|i1"};
    for (int t = 0; t < 2; t++) {
        char dict[128];
        snprintf(dict, sizeof dict,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", descr[t], ROWS,
                 DIM);
        tk_bytes w = {0};
        tk_npy_header(&w, 1, dict);
        for (int i = 0; i < ROWS * DIM; i++)
            tk_u8(&w, u8[i]);
        const char *path = tk_path(t ? "c-i1.npy" : "c-u1.npy");
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        check_raw(path, t ? LBK_DTYPE_INT8 : LBK_DTYPE_UINT8, u8, 1);
        check_widened(path, t ? fi8 : fu8);
    }
    /* float16, little- and big-endian: the bits kept as they are. */
    uint16_t h[ROWS * DIM];
    float fh[ROWS * DIM];
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < DIM; j++) {
            h[r * DIM + j] = half_at(r, j);
            fh[r * DIM + j] = half_value(half_at(r, j));
        }
    for (int big = 0; big < 2; big++) {
        char dict[128];
        snprintf(dict, sizeof dict,
                 "{'descr': '%cf2', 'fortran_order': False, 'shape': (%d, %d), }",
                 big ? '>' : '<', ROWS, DIM);
        tk_bytes w = {0};
        tk_npy_header(&w, 1, dict);
        for (int i = 0; i < ROWS * DIM; i++) {
            tk_u8(&w, big ? h[i] >> 8 : h[i] & 0xff);
            tk_u8(&w, big ? h[i] & 0xff : h[i] >> 8);
        }
        const char *path = tk_path(big ? "c-f2be.npy" : "c-f2.npy");
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        check_raw(path, LBK_DTYPE_FLOAT16, h, 2);
        check_widened(path, fh);
    }
}

/* Float files stay float32 under auto. */
static void case_float_auto(void)
{
    tk_bytes w = {0};
    tk_le32(&w, 1);
    tk_f32le(&w, 2.5f);
    const char *path = tk_path("c.fvecs");
    tk_write_file(path, w.b, w.n);
    tk_free(&w);
    const lbk_job_input_spec s = spec_of(path, LBK_DTYPE_AUTO);
    lbk_dataset d;
    LBK_ASSERT_EQ_INT(lbk_dataset_read(&s, 0, 1, &d), LBK_OK);
    LBK_EXPECT_TRUE(d.dtype == LBK_DTYPE_FLOAT32 && d.raw == NULL && d.points[0] == 2.5f);
    lbk_dataset_free(&d);
}

static const lbk_test_case cases[] = {
    {"compact_bvecs", case_bvecs},
    {"compact_bigann", case_bigann},
    {"compact_idx", case_idx},
    {"compact_npy", case_npy},
    {"compact_float_auto", case_float_auto},
};

const lbk_test_table tk_compact_cases = LBK_TEST_CASES(cases);
