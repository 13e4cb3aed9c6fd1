#include "testkit.h"

#include "lbk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char dir[256];
static char *paths[256];
static int npaths;

static void remove_all(void)
{
    for (int i = 0; i < npaths; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    char err[300];
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    unlink(err);
    if (dir[0])
        rmdir(dir);
}

const char *tk_dir(void)
{
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/lbk-dataset-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(remove_all);
    }
    return dir;
}

const char *tk_path(const char *name)
{
    size_t n = strlen(tk_dir()) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    if (npaths < (int)(sizeof paths / sizeof paths[0]))
        paths[npaths++] = p;
    return p;
}

static void put(tk_bytes *w, const unsigned char *p, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->b = realloc(w->b, w->cap);
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

void tk_u8(tk_bytes *w, unsigned v)
{
    unsigned char c = (unsigned char)v;
    put(w, &c, 1);
}

void tk_le32(tk_bytes *w, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        tk_u8(w, (v >> (8 * i)) & 0xff);
}

void tk_be32(tk_bytes *w, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        tk_u8(w, (v >> (8 * i)) & 0xff);
}

void tk_f32le(tk_bytes *w, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    tk_le32(w, u);
}

void tk_f32be(tk_bytes *w, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    tk_be32(w, u);
}

void tk_npy_header(tk_bytes *w, int version, const char *dict)
{
    const size_t prefix = version == 1 ? 10 : 12, n = strlen(dict);
    const size_t total = (prefix + n + 1 + 63) / 64 * 64, len = total - prefix;
    put(w, (const unsigned char *)"\x93NUMPY", 6);
    tk_u8(w, (unsigned)version);
    tk_u8(w, 0);
    if (version == 1) {
        tk_u8(w, (unsigned)(len & 0xff));
        tk_u8(w, (unsigned)(len >> 8));
    } else {
        tk_le32(w, (uint32_t)len);
    }
    put(w, (const unsigned char *)dict, n);
    for (size_t i = prefix + n; i + 1 < total; i++)
        tk_u8(w, ' ');
    tk_u8(w, '\n');
}

void tk_free(tk_bytes *w)
{
    free(w->b);
    memset(w, 0, sizeof *w);
}

void tk_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

void tk_write_text(const char *path, const char *text)
{
    tk_write_file(path, text, strlen(text));
}

char *tk_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[len] = '\0';
    if (n)
        *n = len;
    return buf;
}

void tk_gzip(const char *from, const char *to)
{
    size_t n = 0;
    char *data = tk_read_file(from, &n);
    gzFile gz = gzopen(to, "wb");
    if (!gz || gzwrite(gz, data, (unsigned)n) != (int)n || gzclose(gz) != Z_OK) {
        fprintf(stdout, "gzip %s failed\n", to);
        exit(2);
    }
    free(data);
}

static char capture_path[300];

void tk_capture_begin(void)
{
    snprintf(capture_path, sizeof capture_path, "%s/stderr.txt", tk_dir());
    fflush(stderr);
    if (!freopen(capture_path, "w", stderr)) {
        perror("freopen");
        exit(2);
    }
}

char *tk_capture_end(void)
{
    fflush(stderr);
    char *text = tk_read_file(capture_path, NULL);
    /* Later output goes on to the same file; the test prints to stdout. */
    if (!freopen(capture_path, "w", stderr))
        exit(2);
    return text;
}

void tk_check_range(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi, const float *points,
                    const int32_t *labels, int dim)
{
    char where[sizeof spec->path + 64];
    snprintf(where, sizeof where, "%s [%llu, %llu)", spec->path, (unsigned long long)lo,
             (unsigned long long)hi);
    lbk_dataset d;
    if (!LBK_EXPECT_EQ_INT(lbk_dataset_read(spec, lo, hi, &d), LBK_OK, "reading %s", where))
        return;
    LBK_EXPECT_EQ_U64(d.rows, hi - lo, "%s", where);
    LBK_EXPECT_EQ_U64(d.first_row, lo, "%s", where);
    LBK_EXPECT_EQ_INT(d.dim, dim, "%s", where);
    LBK_EXPECT_EQ_INT(d.labels != NULL, labels != NULL, "%s: labels", where);
    for (uint64_t i = 0; i < d.rows * (uint64_t)dim; i++)
        if (!LBK_EXPECT_EQ_FLOAT(
                d.points[i], points[lo * (uint64_t)dim + i], "%s: row %llu, value %d", where,
                (unsigned long long)(lo + i / (uint64_t)dim), (int)(i % (uint64_t)dim)))
            break;
    for (uint64_t i = 0; labels && d.labels && i < d.rows; i++)
        if (!LBK_EXPECT_EQ_INT(d.labels[i], labels[lo + i], "%s: label of row %llu", where,
                               (unsigned long long)(lo + i)))
            break;
    lbk_dataset_free(&d);
    LBK_EXPECT_TRUE(d.points == NULL, "freed");
    LBK_EXPECT_TRUE(d.labels == NULL, "freed");
    LBK_EXPECT_EQ_U64(d.rows, 0, "freed");
}

void tk_check_ranges(const lbk_job_input_spec *spec, const float *points, const int32_t *labels,
                     uint64_t rows, int dim)
{
    tk_check_range(spec, 0, rows, points, labels, dim);
    tk_check_range(spec, 0, 0, points, labels, dim);
    tk_check_range(spec, rows, rows, points, labels, dim);
    tk_check_range(spec, 0, 1, points, labels, dim);
    tk_check_range(spec, rows - 1, rows, points, labels, dim);
    if (rows > 3)
        tk_check_range(spec, 1, rows - 2, points, labels, dim);
}

lbk_job_input_spec tk_spec(const char *path)
{
    lbk_job_input_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.path, sizeof s.path, "%s", path);
    s.format = LBK_FORMAT_AUTO;
    s.labels_format = LBK_FORMAT_AUTO;
    s.label_column = -1;
    s.target_column = -1;
    s.delimiter = ',';
    s.header = -1;
    return s;
}
