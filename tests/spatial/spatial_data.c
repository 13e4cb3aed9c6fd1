/* Data sets that stress the spatial partition, written as fvecs points and
 * ivecs labels with a job.yaml beside them (the layout `lbknn generate`
 * writes and tests/e2e/verify_outputs reads). Independent of src/.
 *
 *   spatial_data DIR grid       {0..5}^3 three times over (648 rows): ties on
 *                               every plane and equal keys everywhere
 *   spatial_data DIR duplicates 300 copies of one point
 *   spatial_data DIR clustered  four tight clusters far apart (800 rows)
 * The queries (labelled) mix points of the data, points between them and
 * points far outside every box (up to 1e6 away). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIM 3
#define MAX_ROWS 1024

typedef struct {
    float points[MAX_ROWS][DIM];
    int32_t labels[MAX_ROWS];
    int rows;
} set;

static void add(set *s, float x, float y, float z, int32_t label)
{
    if (s->rows == MAX_ROWS) {
        fprintf(stderr, "spatial_data: more than %d rows\n", MAX_ROWS);
        exit(1);
    }
    s->points[s->rows][0] = x;
    s->points[s->rows][1] = y;
    s->points[s->rows][2] = z;
    s->labels[s->rows++] = label;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static float unit(uint64_t h) { return (float)(h >> 40) / (float)(1 << 24); }

/* Queries far outside any data box, on every side and corner. */
static void add_far(set *q)
{
    const float far[] = {-1e6f, -1e3f, 1e3f, 1e6f};
    for (int i = 0; i < 24; i++)
        add(q, far[i % 4], far[(i / 4) % 4] * (i % 3 == 0 ? 0.0f : 1.0f), far[(i / 2) % 4],
            i % 4);
}

static void make_grid(set *ref, set *q)
{
    for (int copy = 0; copy < 3; copy++)
        for (int x = 0; x < 6; x++)
            for (int y = 0; y < 6; y++)
                for (int z = 0; z < 6; z++)
                    add(ref, (float)x, (float)y, (float)z, (x + y + z + copy) % 4);
    for (int i = 0; i < 150; i++) {
        const uint64_t h = mix((uint64_t)i);
        /* Grid points and half-grid points: many keys tie exactly. */
        add(q, (float)(h % 12) * 0.5f, (float)((h >> 8) % 12) * 0.5f,
            (float)((h >> 16) % 12) * 0.5f, (int32_t)(h % 4));
    }
    add_far(q);
}

static void make_duplicates(set *ref, set *q)
{
    for (int i = 0; i < 300; i++)
        add(ref, 0.25f, 0.5f, 0.75f, i % 3);
    add(q, 0.25f, 0.5f, 0.75f, 0);
    add(q, 0.25f, 0.5f, 0.8f, 1);
    add(q, -3.0f, 2.0f, 0.75f, 2);
    add_far(q);
}

static void make_clustered(set *ref, set *q)
{
    const float centre[4][DIM] = {{0, 0, 0}, {100, 0, 0}, {0, 1e4f, 0}, {-50, -50, 3e3f}};
    for (int i = 0; i < 800; i++) {
        const uint64_t h = mix((uint64_t)i + 77);
        const float *c = centre[i % 4];
        add(ref, c[0] + 1e-3f * unit(h), c[1] + 1e-3f * unit(mix(h)),
            c[2] + 1e-3f * unit(mix(h + 1)), (int32_t)((h >> 20) % 5));
    }
    for (int i = 0; i < 120; i++) {
        const uint64_t h = mix((uint64_t)i + 999);
        const float *a = centre[i % 4], *b = centre[(i / 4) % 4];
        const float t = i % 3 == 0 ? unit(h) : 1e-3f * unit(h); /* between, or inside */
        add(q, a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]),
            (int32_t)(h % 5));
    }
    add_far(q);
}

static int write_vecs(const char *dir, const char *name, const void *rows, int count, int dim)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    const int32_t d = dim;
    for (int i = 0; i < count; i++) {
        const char *row = (const char *)rows + (size_t)i * (size_t)dim * 4;
        if (fwrite(&d, 4, 1, f) != 1 || fwrite(row, 4, (size_t)dim, f) != (size_t)dim)
            break;
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    static set ref, query;
    if (argc != 3) {
        fprintf(stderr, "usage: spatial_data DIR grid|duplicates|clustered\n");
        return 2;
    }
    const char *dir = argv[1], *kind = argv[2];
    if (strcmp(kind, "grid") == 0)
        make_grid(&ref, &query);
    else if (strcmp(kind, "duplicates") == 0)
        make_duplicates(&ref, &query);
    else if (strcmp(kind, "clustered") == 0)
        make_clustered(&ref, &query);
    else
        return fprintf(stderr, "spatial_data: unknown kind '%s'\n", kind), 2;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return perror(dir), 1;
    char job[4096];
    snprintf(job, sizeof job, "%s/job.yaml", dir);
    FILE *f = fopen(job, "w");
    if (!f || write_vecs(dir, "reference.fvecs", ref.points, ref.rows, DIM) ||
        write_vecs(dir, "reference-labels.ivecs", ref.labels, ref.rows, 1) ||
        write_vecs(dir, "query.fvecs", query.points, query.rows, DIM) ||
        write_vecs(dir, "query-labels.ivecs", query.labels, query.rows, 1))
        return fprintf(stderr, "spatial_data: cannot write %s\n", dir), 1;
    fprintf(f,
            "# spatial_data %s: %d reference rows, %d queries\n"
            "reference: {path: reference.fvecs, labels: reference-labels.ivecs}\n"
            "query: {path: query.fvecs, labels: query-labels.ivecs}\n",
            kind, ref.rows, query.rows);
    return fclose(f) != 0;
}
