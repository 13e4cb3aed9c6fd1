/* Round trips and known-byte fixtures for every format, CSV layouts and
 * label sources. Known-byte fixtures are encoded by testkit, not by src/. */
#include "cases.h"
#include "lbk_test.h"
#include "testkit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROWS 7
#define DIM 5

enum { FLOATS, INTS, BYTES };

static void make_points(int kind, float *p, uint64_t n)
{
    lbk_test_rng rng = LBK_TEST_RNG(12345u + (uint64_t)kind);
    for (uint64_t i = 0; i < n; i++) {
        const uint32_t r = (uint32_t)lbk_test_rng_next(&rng);
        p[i] = kind == BYTES  ? (float)(r % 256)
               : kind == INTS ? (float)((int32_t)(r % 200001) - 100000)
                              : ((float)(r % 2000001) - 1000000.0f) / 997.0f;
    }
    if (kind == FLOATS) { /* extremes that %.9g must still round-trip */
        p[0] = 3.40282347e38f;
        p[1] = 1.17549435e-38f;
        p[2] = -0.1f;
        p[3] = 1.0f / 3.0f;
    }
}

static void make_labels(int32_t *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        l[i] = (int32_t)((i * 7 + 3) % 11);
}

static void roundtrip(const char *name, lbk_format format, int kind)
{
    float p[ROWS * DIM];
    make_points(kind, p, ROWS * DIM);
    lbk_dataset d = {.rows = ROWS, .dim = DIM, .points = p};
    const char *path = tk_path(name);
    LBK_EXPECT_EQ_INT(lbk_dataset_write_points(path, format, &d), LBK_OK);
    lbk_job_input_spec spec = tk_spec(path);
    lbk_dataset_info info;
    LBK_EXPECT_EQ_INT(lbk_dataset_probe(&spec, &info), LBK_OK);
    LBK_EXPECT_EQ_U64(info.rows, ROWS);
    LBK_EXPECT_EQ_INT(info.dim, DIM);
    LBK_EXPECT_FALSE(info.has_labels);
    LBK_EXPECT_EQ_INT(info.format, lbk_dataset_format_from_path(path));
    tk_check_ranges(&spec, p, NULL, ROWS, DIM);
}

static void case_format_from_path(void)
{
    static const struct {
        const char *path;
        lbk_format format;
    } t[] = {
        {"a.fvecs", LBK_FORMAT_FVECS},
        {"dir.x/a.ivecs", LBK_FORMAT_IVECS},
        {"A.BVECS", LBK_FORMAT_BVECS},
        {"a.csv", LBK_FORMAT_CSV},
        {"a.tsv", LBK_FORMAT_CSV},
        {"a.txt", LBK_FORMAT_TEXT},
        {"a.labels", LBK_FORMAT_TEXT},
        {"a.idx", LBK_FORMAT_IDX},
        {"a.idx.gz", LBK_FORMAT_IDX},
        {"train-images-idx3-ubyte", LBK_FORMAT_IDX},
        {"train-images-idx3-ubyte.gz", LBK_FORMAT_IDX},
        {"t10k-labels.idx1-ubyte", LBK_FORMAT_IDX},
        {"t10k-labels.idx1-ubyte.gz", LBK_FORMAT_IDX},
        {"a.npy", LBK_FORMAT_NPY},
        {"B.NPY", LBK_FORMAT_NPY},
        {"base.fbin", LBK_FORMAT_FBIN},
        {"base.u8bin", LBK_FORMAT_U8BIN},
        {"base.i8bin", LBK_FORMAT_I8BIN},
        {"gt.ibin", LBK_FORMAT_IBIN},
        {"a.npz", LBK_FORMAT_AUTO},
        {"a.csv.gz", LBK_FORMAT_AUTO},
        {"a.fvecs.bak", LBK_FORMAT_AUTO},
        {"fvecs", LBK_FORMAT_AUTO},
        {"", LBK_FORMAT_AUTO},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        LBK_EXPECT_EQ_INT(lbk_dataset_format_from_path(t[i].path), t[i].format, "path '%s'",
                          t[i].path);
    }
}

static void case_fvecs_roundtrip(void) { roundtrip("a.fvecs", LBK_FORMAT_FVECS, FLOATS); }
static void case_ivecs_roundtrip(void) { roundtrip("a.ivecs", LBK_FORMAT_IVECS, INTS); }
static void case_bvecs_roundtrip(void) { roundtrip("a.bvecs", LBK_FORMAT_BVECS, BYTES); }
static void case_idx_roundtrip(void)
{
    roundtrip("bytes.idx", LBK_FORMAT_IDX, BYTES);
    roundtrip("floats.idx", LBK_FORMAT_IDX, FLOATS);
    /* Byte-valued points are stored as ubyte: header + one byte per value. */
    size_t n = 0;
    free(tk_read_file(tk_path("bytes.idx"), &n));
    LBK_EXPECT_EQ_U64(n, 12 + ROWS * DIM);
}

static void case_npy_roundtrip(void)
{
    roundtrip("a.npy", LBK_FORMAT_NPY, FLOATS);
    /* The header pads the data's start to a multiple of 64 bytes, as
     * NumPy's own; then the values, nothing else. */
    size_t n = 0;
    free(tk_read_file(tk_path("a.npy"), &n));
    LBK_EXPECT_U64(n, >, ROWS * DIM * 4);
    LBK_EXPECT_EQ_U64((n - ROWS * DIM * 4) % 64, 0);
}

static void case_bigann_roundtrip(void)
{
    roundtrip("a.fbin", LBK_FORMAT_FBIN, FLOATS);
    roundtrip("a.u8bin", LBK_FORMAT_U8BIN, BYTES);
    roundtrip("a.ibin", LBK_FORMAT_IBIN, INTS);
    size_t n = 0;
    free(tk_read_file(tk_path("a.u8bin"), &n));
    LBK_EXPECT_EQ_U64(n, 8 + ROWS * DIM);
}

static void case_csv_roundtrip(void)
{
    float p[ROWS * DIM];
    int32_t l[ROWS];
    make_points(FLOATS, p, ROWS * DIM);
    make_labels(l, ROWS);
    const char *path = tk_path("a.csv");
    lbk_dataset d = {.rows = ROWS, .dim = DIM, .points = p};
    LBK_EXPECT_EQ_INT(lbk_dataset_write_points(path, LBK_FORMAT_CSV, &d), LBK_OK);
    lbk_job_input_spec spec = tk_spec(path);
    tk_check_ranges(&spec, p, NULL, ROWS, DIM);

    d.labels = l; /* now the label is the last column */
    LBK_EXPECT_EQ_INT(lbk_dataset_write_points(path, LBK_FORMAT_CSV, &d), LBK_OK);
    spec.label_column = DIM;
    tk_check_ranges(&spec, p, l, ROWS, DIM);
}

/* The file holds exactly the bytes of w. */
static void expect_file_bytes(const char *path, const tk_bytes *w)
{
    size_t n = 0;
    char *got = tk_read_file(path, &n);
    if (LBK_EXPECT_EQ_U64(n, w->n, "%s", path))
        LBK_EXPECT_EQ_MEM(got, w->b, n, "%s", path);
    free(got);
}

static void case_fvecs_bytes(void)
{
    /* 3 records of dim 2, little-endian as TEXMEX defines. */
    const float v[6] = {1.5f, -2.25f, 0.0f, 1e-3f, 7.0f, -0.0f};
    tk_bytes w = {0};
    for (int r = 0; r < 3; r++) {
        tk_le32(&w, 2);
        tk_f32le(&w, v[2 * r]);
        tk_f32le(&w, v[2 * r + 1]);
    }
    const char *path = tk_path("known.fvecs");
    tk_write_file(path, w.b, w.n);
    lbk_job_input_spec spec = tk_spec(path);
    tk_check_ranges(&spec, v, NULL, 3, 2);
    /* The writer produces exactly these bytes. */
    const char *out = tk_path("written.fvecs");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_fvecs(out, v, 3, 2), LBK_OK);
    expect_file_bytes(out, &w);
    tk_free(&w);
}

static void case_ivecs_bvecs_bytes(void)
{
    tk_bytes w = {0};
    const int32_t iv[4] = {-7, 2147483647, 0, 42};
    for (int r = 0; r < 2; r++) {
        tk_le32(&w, 2);
        tk_le32(&w, (uint32_t)iv[2 * r]);
        tk_le32(&w, (uint32_t)iv[2 * r + 1]);
    }
    const char *ipath = tk_path("known.ivecs");
    tk_write_file(ipath, w.b, w.n);
    const float ivf[4] = {-7.0f, 2147483648.0f, 0.0f, 42.0f}; /* int -> float rounding */
    lbk_job_input_spec spec = tk_spec(ipath);
    tk_check_ranges(&spec, ivf, NULL, 2, 2);
    const char *out = tk_path("written.ivecs");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_ivecs(out, iv, 2, 2), LBK_OK);
    expect_file_bytes(out, &w);
    tk_free(&w);

    const unsigned char bv[6] = {0, 255, 128, 1, 2, 3};
    for (int r = 0; r < 2; r++) {
        tk_le32(&w, 3);
        for (int j = 0; j < 3; j++)
            tk_u8(&w, bv[3 * r + j]);
    }
    const char *bpath = tk_path("known.bvecs");
    tk_write_file(bpath, w.b, w.n);
    const float bvf[6] = {0, 255, 128, 1, 2, 3};
    spec = tk_spec(bpath);
    tk_check_ranges(&spec, bvf, NULL, 2, 3);
    tk_free(&w);
}

/* MNIST layout: 0x00000803, n, 28, 28 -> here n = 3 images of 2 x 2, with
 * 0x00000801 labels. */
static void write_mnist(const char *images, const char *labels, const float *v, const int32_t *l)
{
    tk_bytes w = {0};
    tk_be32(&w, 0x00000803);
    tk_be32(&w, 3);
    tk_be32(&w, 2);
    tk_be32(&w, 2);
    for (int i = 0; i < 12; i++)
        tk_u8(&w, (unsigned)v[i]);
    tk_write_file(images, w.b, w.n);
    tk_free(&w);
    tk_be32(&w, 0x00000801);
    tk_be32(&w, 3);
    for (int i = 0; i < 3; i++)
        tk_u8(&w, (unsigned)l[i]);
    tk_write_file(labels, w.b, w.n);
    tk_free(&w);
}

static void case_idx_mnist_bytes(void)
{
    const float v[12] = {0, 1, 2, 3, 255, 254, 253, 252, 9, 8, 7, 6};
    const int32_t l[3] = {5, 0, 9};
    const char *images = tk_path("train-images-idx3-ubyte");
    const char *labels = tk_path("train-labels-idx1-ubyte");
    write_mnist(images, labels, v, l);
    lbk_job_input_spec spec = tk_spec(images);
    snprintf(spec.labels, sizeof spec.labels, "%s", labels);
    lbk_dataset_info info;
    LBK_EXPECT_EQ_INT(lbk_dataset_probe(&spec, &info), LBK_OK);
    LBK_EXPECT_EQ_U64(info.rows, 3);
    LBK_EXPECT_EQ_INT(info.dim, 4);
    LBK_EXPECT_TRUE(info.has_labels);
    LBK_EXPECT_EQ_INT(info.format, LBK_FORMAT_IDX);
    LBK_EXPECT_EQ_INT(info.labels_format, LBK_FORMAT_IDX);
    tk_check_ranges(&spec, v, l, 3, 4);

    /* Float IDX (0x0D), big-endian. */
    tk_bytes w = {0};
    const float f[4] = {0.5f, -1.25f, 3e10f, -0.0f};
    tk_be32(&w, 0x00000D02);
    tk_be32(&w, 2);
    tk_be32(&w, 2);
    for (int i = 0; i < 4; i++)
        tk_f32be(&w, f[i]);
    const char *fpath = tk_path("floats.idx");
    tk_write_file(fpath, w.b, w.n);
    tk_free(&w);
    lbk_job_input_spec fspec = tk_spec(fpath);
    tk_check_ranges(&fspec, f, NULL, 2, 2);
}

static void case_idx_gz(void)
{
    const float v[12] = {0, 1, 2, 3, 255, 254, 253, 252, 9, 8, 7, 6};
    const int32_t l[3] = {5, 0, 9};
    const char *images = tk_path("imgs-ubyte");
    const char *labels = tk_path("lbls-ubyte");
    write_mnist(images, labels, v, l);
    const char *gimages = tk_path("t10k-images-idx3-ubyte.gz");
    const char *glabels = tk_path("t10k-labels-idx1-ubyte.gz");
    tk_gzip(images, gimages);
    tk_gzip(labels, glabels);
    lbk_job_input_spec spec = tk_spec(gimages);
    snprintf(spec.labels, sizeof spec.labels, "%s", glabels);
    tk_check_ranges(&spec, v, l, 3, 4);

    /* Our own writer's output, compressed, reads back the same. */
    float p[ROWS * DIM];
    make_points(FLOATS, p, ROWS * DIM);
    lbk_dataset d = {.rows = ROWS, .dim = DIM, .points = p};
    const char *plain = tk_path("mine.idx");
    const char *gz = tk_path("mine.idx.gz");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_points(plain, LBK_FORMAT_IDX, &d), LBK_OK);
    tk_gzip(plain, gz);
    lbk_job_input_spec gspec = tk_spec(gz);
    tk_check_ranges(&gspec, p, NULL, ROWS, DIM);
}

/* Two gzip members one after the other (what `cat a.gz b.gz` makes) read
 * as their concatenation: the whole-file path takes one member only, so
 * this file goes through the streaming one. */
static void case_idx_gz_two_members(void)
{
    const float v[12] = {0, 1, 2, 3, 255, 254, 253, 252, 9, 8, 7, 6};
    const int32_t l[3] = {5, 0, 9};
    const char *images = tk_path("imgs-ubyte");
    write_mnist(images, tk_path("lbls-ubyte"), v, l);
    size_t n = 0, n0 = 0, n1 = 0;
    char *whole = tk_read_file(images, &n);
    tk_write_file(tk_path("part0"), whole, n / 2);
    tk_write_file(tk_path("part1"), whole + n / 2, n - n / 2);
    tk_gzip(tk_path("part0"), tk_path("part0.gz"));
    tk_gzip(tk_path("part1"), tk_path("part1.gz"));
    char *m0 = tk_read_file(tk_path("part0.gz"), &n0);
    char *m1 = tk_read_file(tk_path("part1.gz"), &n1);
    char *both = malloc(n0 + n1);
    memcpy(both, m0, n0);
    memcpy(both + n0, m1, n1);
    const char *gz = tk_path("two-members-ubyte.gz");
    tk_write_file(gz, both, n0 + n1);
    lbk_job_input_spec spec = tk_spec(gz);
    tk_check_ranges(&spec, v, NULL, 3, 4);
    free(whole);
    free(m0);
    free(m1);
    free(both);
}

static void case_labels_formats(void)
{
    float p[ROWS * DIM];
    int32_t l[ROWS];
    make_points(FLOATS, p, ROWS * DIM);
    make_labels(l, ROWS);
    l[2] = 300; /* IDX labels then need int32, not ubyte */
    const char *points = tk_path("p.fvecs");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_fvecs(points, p, ROWS, DIM), LBK_OK);
    const struct {
        const char *name;
        lbk_format format;
    } t[] = {
        {"l.ivecs", LBK_FORMAT_IVECS}, {"l.idx", LBK_FORMAT_IDX}, {"l.txt", LBK_FORMAT_TEXT},
        {"l.labels", LBK_FORMAT_TEXT}, {"l.csv", LBK_FORMAT_CSV}, {"l.npy", LBK_FORMAT_NPY},
        {"l.ibin", LBK_FORMAT_IBIN},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *path = tk_path(t[i].name);
        LBK_EXPECT_EQ_INT(lbk_dataset_write_labels(path, t[i].format, l, ROWS), LBK_OK);
        lbk_job_input_spec spec = tk_spec(points);
        snprintf(spec.labels, sizeof spec.labels, "%s", path);
        lbk_dataset_info info;
        LBK_EXPECT_EQ_INT(lbk_dataset_probe(&spec, &info), LBK_OK);
        LBK_EXPECT_TRUE(info.has_labels, "%s", t[i].name);
        LBK_EXPECT_EQ_INT(info.labels_format, t[i].format, "%s", t[i].name);
        tk_check_ranges(&spec, p, l, ROWS, DIM);
    }
    /* Text labels are plain decimal lines. */
    char *text = tk_read_file(tk_path("l.txt"), NULL);
    LBK_EXPECT_EQ_STR(text, "3\n10\n300\n2\n9\n5\n1\n");
    free(text);
    /* A CSV label file may start with a header line. */
    const char *hdr = tk_path("h.csv");
    tk_write_text(hdr, "label\n3\n10\n300\n2\n9\n5\n1\n\n");
    lbk_job_input_spec spec = tk_spec(points);
    snprintf(spec.labels, sizeof spec.labels, "%s", hdr);
    tk_check_ranges(&spec, p, l, ROWS, DIM);
}

/* NumPy files as NumPy writes them (headers built by testkit): every points
 * dtype, both byte orders, version 2.0, and integer labels of any width. */
static void case_npy_known_bytes(void)
{
    const float v[6] = {1.5f, -2.25f, 0.0f, 1e-3f, 7.0f, -0.0f};
    tk_bytes w = {0};
    tk_npy_header(&w, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }");
    for (int i = 0; i < 6; i++)
        tk_f32le(&w, v[i]);
    const char *f4 = tk_path("f4.npy");
    tk_write_file(f4, w.b, w.n);
    tk_free(&w);
    lbk_job_input_spec spec = tk_spec(f4);
    tk_check_ranges(&spec, v, NULL, 3, 2);

    /* float64, big-endian float32 (version 2.0), uint8 and int8. */
    const double dv[6] = {1.5, -2.25, 0.0, 1e-3, 7.0, -0.0};
    tk_npy_header(&w, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }");
    for (int i = 0; i < 6; i++) {
        uint64_t u;
        memcpy(&u, &dv[i], 8);
        tk_le32(&w, (uint32_t)u);
        tk_le32(&w, (uint32_t)(u >> 32));
    }
    const char *f8 = tk_path("f8.npy");
    tk_write_file(f8, w.b, w.n);
    tk_free(&w);
    const float dvf[6] = {1.5f, -2.25f, 0.0f, (float)1e-3, 7.0f, -0.0f};
    spec = tk_spec(f8);
    tk_check_ranges(&spec, dvf, NULL, 3, 2);
    tk_npy_header(&w, 2, "{'shape': (3, 2), 'fortran_order': False, 'descr': '>f4'}");
    for (int i = 0; i < 6; i++)
        tk_f32be(&w, v[i]);
    const char *be = tk_path("be.npy");
    tk_write_file(be, w.b, w.n);
    tk_free(&w);
    spec = tk_spec(be);
    tk_check_ranges(&spec, v, NULL, 3, 2);
    const unsigned char bytes[6] = {0, 255, 128, 1, 0x80, 0x7f};
    const float u8[6] = {0, 255, 128, 1, 128, 127}, i8[6] = {0, -1, -128, 1, -128, 127};
    const char *names[2] = {"u8.npy", "i8.npy"}, *descr[2] = {"|u1", "|i1"};
    for (int t = 0; t < 2; t++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }",
                 descr[t]);
        tk_npy_header(&w, 1, dict);
        for (int i = 0; i < 6; i++)
            tk_u8(&w, bytes[i]);
        const char *path = tk_path(names[t]);
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        spec = tk_spec(path);
        tk_check_ranges(&spec, t ? i8 : u8, NULL, 2, 3);
    }
}

/* Labels: int64 vectors (NumPy's default integer), int32 N x 1 columns,
 * uint8, and Fortran order, which is C order for a vector. */
static void case_npy_labels(void)
{
    const float p[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int32_t l[4] = {3, 0, 70000, 2};
    const char *points = tk_path("lp.fvecs");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_fvecs(points, p, 4, 2), LBK_OK);
    const char *dicts[3] = {"{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }",
                            "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 1), }",
                            "{'descr': '<u4', 'fortran_order': True, 'shape': (4,), }"};
    for (int t = 0; t < 3; t++) {
        tk_bytes w = {0};
        tk_npy_header(&w, 1, dicts[t]);
        for (int i = 0; i < 4; i++) {
            tk_le32(&w, (uint32_t)l[i]);
            if (t == 0)
                tk_le32(&w, 0);
        }
        char name[32];
        snprintf(name, sizeof name, "labels%d.npy", t);
        const char *path = tk_path(name);
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        lbk_job_input_spec spec = tk_spec(points);
        snprintf(spec.labels, sizeof spec.labels, "%s", path);
        tk_check_ranges(&spec, p, l, 4, 2);
    }
    /* Our writer: int32 labels, read back through the extension. */
    const char *mine = tk_path("mine-labels.npy");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_labels(mine, LBK_FORMAT_AUTO, l, 4), LBK_OK);
    lbk_job_input_spec spec = tk_spec(points);
    snprintf(spec.labels, sizeof spec.labels, "%s", mine);
    tk_check_ranges(&spec, p, l, 4, 2);
}

/* big-ann-benchmarks files as their tools write them: header uint32 rows,
 * uint32 dim, then the values. */
static void case_bigann_known_bytes(void)
{
    const float v[6] = {1.5f, -2.25f, 0.0f, 1e-3f, 7.0f, -0.0f};
    tk_bytes w = {0};
    tk_le32(&w, 2);
    tk_le32(&w, 3);
    for (int i = 0; i < 6; i++)
        tk_f32le(&w, v[i]);
    const char *fbin = tk_path("base.fbin");
    tk_write_file(fbin, w.b, w.n);
    lbk_job_input_spec spec = tk_spec(fbin);
    tk_check_ranges(&spec, v, NULL, 2, 3);
    /* The writer produces exactly these bytes. */
    lbk_dataset d = {.rows = 2, .dim = 3, .points = (float *)v};
    const char *out = tk_path("written.fbin");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_points(out, LBK_FORMAT_AUTO, &d), LBK_OK);
    expect_file_bytes(out, &w);
    tk_free(&w);
    const unsigned char bytes[6] = {0, 255, 128, 1, 0x80, 0x7f};
    const float u8[6] = {0, 255, 128, 1, 128, 127}, i8[6] = {0, -1, -128, 1, -128, 127};
    const char *names[2] = {"base.u8bin", "base.i8bin"};
    for (int t = 0; t < 2; t++) {
        tk_le32(&w, 3);
        tk_le32(&w, 2);
        for (int i = 0; i < 6; i++)
            tk_u8(&w, bytes[i]);
        const char *path = tk_path(names[t]);
        tk_write_file(path, w.b, w.n);
        tk_free(&w);
        spec = tk_spec(path);
        tk_check_ranges(&spec, t ? i8 : u8, NULL, 3, 2);
    }
    /* ibin labels: dimension 1. */
    const int32_t l[2] = {9, 0};
    tk_le32(&w, 2);
    tk_le32(&w, 1);
    tk_le32(&w, 9);
    tk_le32(&w, 0);
    const char *ibin = tk_path("labels.ibin");
    tk_write_file(ibin, w.b, w.n);
    tk_free(&w);
    spec = tk_spec(fbin);
    snprintf(spec.labels, sizeof spec.labels, "%s", ibin);
    tk_check_ranges(&spec, v, l, 2, 3);
}

static const float grid[6] = {1.5f, 2, 3, -4, 5e-3f, 6};

static void expect_csv(const char *name, const char *text, char delim, int header, int label_col,
                       const float *points, const int32_t *labels, uint64_t rows, int dim)
{
    const char *path = tk_path(name);
    tk_write_text(path, text);
    lbk_job_input_spec spec = tk_spec(path);
    spec.delimiter = delim;
    spec.header = header;
    spec.label_column = label_col;
    lbk_dataset_info info;
    LBK_EXPECT_EQ_INT(lbk_dataset_probe(&spec, &info), LBK_OK);
    LBK_EXPECT_EQ_U64(info.rows, rows, "%s", name);
    LBK_EXPECT_EQ_INT(info.dim, dim, "%s", name);
    tk_check_ranges(&spec, points, labels, rows, dim);
}

static void case_csv_header(void)
{
    expect_csv("auto-hdr.csv", "x,y,z\n1.5,2,3\n-4,5e-3,6\n", ',', -1, -1, grid, NULL, 2, 3);
    expect_csv("auto-none.csv", "1.5,2,3\n-4,5e-3,6\n", ',', -1, -1, grid, NULL, 2, 3);
    expect_csv("yes.csv", "1,1,1\n1.5,2,3\n-4,5e-3,6\n", ',', 1, -1, grid, NULL, 2, 3);
    expect_csv("no.csv", "1.5,2,3\n-4,5e-3,6\n", ',', 0, -1, grid, NULL, 2, 3);
    /* One non-numeric field is enough to make the first line a header. */
    expect_csv("auto-mixed.csv", "1,2,c\n1.5,2,3\n-4,5e-3,6\n", ',', -1, -1, grid, NULL, 2, 3);
}

static void case_csv_label_middle(void)
{
    const int32_t l[2] = {7, 0};
    expect_csv("mid.csv", "a,label,b,c\n1.5,7,2,3\n-4,0,5e-3,6\n", ',', -1, 1, grid, l, 2, 3);
    expect_csv("first.csv", "7,1.5,2,3\n0,-4,5e-3,6\n", ',', 0, 0, grid, l, 2, 3);
}

static void case_csv_tab_crlf(void)
{
    const int32_t l[2] = {7, 0};
    expect_csv("tab.tsv", "x\ty\tz\tc\r\n 1.5\t2 \t 3\t7\r\n-4\t5e-3\t6\t0\r\n", '\t', -1, 3,
               grid, l, 2, 3);
    expect_csv("crlf.csv", "1.5 , 2 , 3\r\n  -4,5e-3,6  \r\n\r\n\n  \n", ',', -1, -1, grid, NULL,
               2, 3);
    expect_csv("semi.csv", "1.5;2;3\n-4;5e-3;6", ';', -1, -1, grid, NULL, 2, 3);
}

static void case_write_errors(void)
{
    const float v[4] = {1, 2, 3.5f, 4};
    lbk_dataset d = {.rows = 2, .dim = 2, .points = (float *)v};
    const char *b = tk_path("bad.bvecs");
    tk_capture_begin();
    lbk_status st = lbk_dataset_write_points(b, LBK_FORMAT_BVECS, &d);
    char *err = tk_capture_end();
    LBK_EXPECT_EQ_INT(st, LBK_ERR_INPUT);
    char want[2048];
    snprintf(want, sizeof want,
             "lbknn: error: %s:2:1: cannot write 3.5: bvecs holds integers 0..255\n", b);
    LBK_EXPECT_EQ_STR(err, want);
    free(err);

    const float big[2] = {256, 0};
    d = (lbk_dataset){.rows = 1, .dim = 2, .points = (float *)big};
    tk_capture_begin();
    LBK_EXPECT_EQ_INT(lbk_dataset_write_points(b, LBK_FORMAT_BVECS, &d), LBK_ERR_INPUT);
    free(tk_capture_end());

    char nodir[512];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/x.fvecs", tk_dir());
    tk_capture_begin();
    st = lbk_dataset_write_fvecs(nodir, v, 2, 2);
    err = tk_capture_end();
    LBK_EXPECT_EQ_INT(st, LBK_ERR_IO);
    snprintf(want, sizeof want, "lbknn: error: %s: cannot create: No such file or directory\n",
             nodir);
    LBK_EXPECT_EQ_STR(err, want);
    free(err);

    /* A full device shows only when the data is flushed: fclose must be checked. */
    if (access("/dev/full", W_OK) == 0) {
        tk_capture_begin();
        st = lbk_dataset_write_labels("/dev/full", LBK_FORMAT_TEXT, (const int32_t[]){1, 2}, 2);
        err = tk_capture_end();
        LBK_EXPECT_EQ_INT(st, LBK_ERR_IO);
        LBK_EXPECT_EQ_STR(err,
                          "lbknn: error: /dev/full: cannot write: No space left on device\n");
        free(err);
    }
}

static void case_fvecs_inf_written(void)
{
    /* Distance outputs may carry +inf padding: the raw writer keeps it. */
    const float v[2] = {INFINITY, 1.0f};
    const char *path = tk_path("dist.fvecs");
    LBK_EXPECT_EQ_INT(lbk_dataset_write_fvecs(path, v, 1, 2), LBK_OK);
    size_t n = 0;
    char *got = tk_read_file(path, &n);
    LBK_EXPECT_EQ_U64(n, 12);
    free(got);
}

static const lbk_test_case cases[] = {
    {"format_from_path", case_format_from_path},
    {"fvecs_roundtrip", case_fvecs_roundtrip},
    {"ivecs_roundtrip", case_ivecs_roundtrip},
    {"bvecs_roundtrip", case_bvecs_roundtrip},
    {"idx_roundtrip", case_idx_roundtrip},
    {"csv_roundtrip", case_csv_roundtrip},
    {"npy_roundtrip", case_npy_roundtrip},
    {"bigann_roundtrip", case_bigann_roundtrip},
    {"npy_known_bytes", case_npy_known_bytes},
    {"npy_labels", case_npy_labels},
    {"bigann_known_bytes", case_bigann_known_bytes},
    {"fvecs_known_bytes", case_fvecs_bytes},
    {"ivecs_bvecs_known_bytes", case_ivecs_bvecs_bytes},
    {"idx_mnist_known_bytes", case_idx_mnist_bytes},
    {"idx_gz", case_idx_gz},
    {"idx_gz_two_members", case_idx_gz_two_members},
    {"labels_formats", case_labels_formats},
    {"csv_header", case_csv_header},
    {"csv_label_middle", case_csv_label_middle},
    {"csv_tab_crlf", case_csv_tab_crlf},
    {"write_errors", case_write_errors},
    {"fvecs_inf_written", case_fvecs_inf_written},
};

const lbk_test_table tk_good_cases = LBK_TEST_CASES(cases);
