/* The job file's sections and keys: the one table every other part of the
 * job layer walks. Key and section names are the lbk_job member names,
 * spelt once, by the macros below. */
#include "job_schema.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Enum fields are read and written through memcpy of an int. */
_Static_assert(sizeof(lbk_format) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_metric) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_weights) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_engine) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_device_type) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_tree_split) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_tree_sort) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_merge_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_partition) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_balance) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_task) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_overflow) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_dtype) == sizeof(int), "enum size");

#define SECTION_ITEM_(constant, member) {#member, LBK_SEC_##constant},
const lbk_enum_item lbk_job_sections[] = {LBK_JOB_SECTION_LIST(SECTION_ITEM_){NULL, 0}};

/* Formats are one enumeration, but points and labels each accept a subset
 * (in this order in messages). The names come from LBK_FORMAT_LIST. */
#define FORMAT_NAME_(constant, name)                                                             \
    static const char format_name_##constant[] __attribute__((unused)) = name;
LBK_FORMAT_LIST(FORMAT_NAME_)
#define FORMAT_(constant)                                                                        \
    {                                                                                            \
        format_name_##constant, constant                                                         \
    }
const lbk_enum_item lbk_job_points_formats[] = {FORMAT_(LBK_FORMAT_AUTO),
                                                FORMAT_(LBK_FORMAT_FVECS),
                                                FORMAT_(LBK_FORMAT_IVECS),
                                                FORMAT_(LBK_FORMAT_BVECS),
                                                FORMAT_(LBK_FORMAT_CSV),
                                                FORMAT_(LBK_FORMAT_IDX),
                                                FORMAT_(LBK_FORMAT_NPY),
                                                FORMAT_(LBK_FORMAT_FBIN),
                                                FORMAT_(LBK_FORMAT_U8BIN),
                                                FORMAT_(LBK_FORMAT_I8BIN),
                                                FORMAT_(LBK_FORMAT_IBIN),
                                                FORMAT_(LBK_FORMAT_HDF5),
                                                {NULL, 0}};
const lbk_enum_item lbk_job_labels_formats[] = {
    FORMAT_(LBK_FORMAT_AUTO), FORMAT_(LBK_FORMAT_IVECS), FORMAT_(LBK_FORMAT_IDX),
    FORMAT_(LBK_FORMAT_TEXT), FORMAT_(LBK_FORMAT_CSV),   FORMAT_(LBK_FORMAT_NPY),
    FORMAT_(LBK_FORMAT_IBIN), FORMAT_(LBK_FORMAT_HDF5),  {NULL, 0}};

/* KEY(SECTION, in, key, kind, min, max, items): the key `key` of section
 * SECTION, whose value is lbk_job's member in.key (the key's name is the
 * member's); its kind, its range [min, max] (INT and U64) and the names an
 * ENUM key takes. Each row ends with its comma, so that the rows of
 * LBK_JOB_OUTPUT_LIST join in. */
#define KEY(SEC, in, key, kind, min, max, items)                                                 \
    {LBK_SEC_##SEC, #key, LBK_KEY_##kind, offsetof(lbk_job, in.key), min, max, items},
#define OUTPUT_KEY_(key) KEY(OUTPUT, output, key, OUT_PATH, 0, 0, NULL)

/* What follows are tables, one key a row, their columns aligned by hand:
 * clang-format would run the rows together. */
/* clang-format off */

/* A data source's keys: the reference and query sections have the same. */
#define INPUT_KEYS(SEC, in)                                                                      \
    /*  section in   key             kind     min max      items */                              \
    KEY(SEC,    in,  path,           IN_PATH, 0,  0,       NULL)                                 \
    KEY(SEC,    in,  format,         ENUM,    0,  0,       lbk_job_points_formats)               \
    KEY(SEC,    in,  labels,         IN_PATH, 0,  0,       NULL)                                 \
    KEY(SEC,    in,  labels_format,  ENUM,    0,  0,       lbk_job_labels_formats)               \
    KEY(SEC,    in,  label_column,   INT,     -1, INT_MAX, NULL)                                 \
    KEY(SEC,    in,  targets,        IN_PATH, 0,  0,       NULL)                                 \
    KEY(SEC,    in,  target_column,  INT,     -1, INT_MAX, NULL)                                 \
    KEY(SEC,    in,  delimiter,      CHAR,    0,  0,       NULL)                                 \
    KEY(SEC,    in,  header,         HEADER,  0,  0,       NULL)                                 \
    KEY(SEC,    in,  dataset,        NAME,    0,  0,       NULL)                                 \
    KEY(SEC,    in,  labels_dataset, NAME,    0,  0,       NULL)

/* The ground truth's keys stand in the query section, stored in job.truth. */
#define TRUTH_KEYS                                                                               \
    /*  section in     key                kind     min max items */                              \
    KEY(QUERY,  truth, neighbors,         IN_PATH, 0,  0,  NULL)                                 \
    KEY(QUERY,  truth, neighbors_dataset, NAME,    0,  0,  NULL)                                 \
    KEY(QUERY,  truth, distances,         IN_PATH, 0,  0,  NULL)                                 \
    KEY(QUERY,  truth, distances_dataset, NAME,    0,  0,  NULL)                                 \
    KEY(QUERY,  radius, radii,            IN_PATH, 0,  0,  NULL)

/* Every key, in print order. task stands at the top level, outside any
 * section. */
const lbk_job_key_desc lbk_job_keys[] = {
    {LBK_SEC_TOP, "task", LBK_KEY_ENUM, offsetof(lbk_job, task), 0, 0, lbk_task_items},
    INPUT_KEYS(REFERENCE, reference)
    KEY(REFERENCE, reference, type,          ENUM,     0,     0,         lbk_dtype_items)
    INPUT_KEYS(QUERY, query)
    TRUTH_KEYS
    /*  section    in         key            kind      min    max        items */
    KEY(SYNTHETIC, synthetic, points,        U64,      1,     INT64_MAX, NULL)
    KEY(SYNTHETIC, synthetic, queries,       U64,      1,     INT64_MAX, NULL)
    KEY(SYNTHETIC, synthetic, dim,           INT,      1,     4096,      NULL)
    KEY(SYNTHETIC, synthetic, classes,       INT,      1,     100000,    NULL)
    KEY(SYNTHETIC, synthetic, seed,          U64,      0,     INT64_MAX, NULL)
    KEY(SYNTHETIC, synthetic, spread,        DOUBLE,   0,     0,         NULL)
    KEY(KNN,       knn,       k,             INT,      1,     LBK_K_MAX, NULL)
    KEY(KNN,       knn,       metric,        ENUM,     0,     0,         lbk_metric_items)
    KEY(KNN,       knn,       weights,       ENUM,     0,     0,         lbk_weights_items)
    KEY(KNN,       knn,       engine,        ENUM,     0,     0,         lbk_engine_items)
    KEY(KNN,       knn,       temperature,   DOUBLE,   0,     0,         NULL)
    KEY(KNN,       knn,       radius,        REAL,     0,     0,         NULL)
    KEY(KNN,       knn,       outlier_label, NAME,     0,     0,         NULL)
    KEY(DEVICE,    device,    type,          ENUM,     0,     0,         lbk_device_type_items)
    KEY(DEVICE,    device,    batch,         U64,      0,     INT64_MAX, NULL)
    KEY(DEVICE,    device,    groups,        INT,      0,     4096,      NULL)
    KEY(DEVICE,    device,    memory_mb,     U64,      0,     INT64_MAX, NULL)
    KEY(DEVICE,    device,    list,          DEV_LIST, 0,     INT_MAX,   NULL)
    KEY(DEVICE,    device,    threads,       INT,      -4096, 4096,      NULL)
    KEY(TREE,      tree,      split,         ENUM,     0,     0,         lbk_tree_split_items)
    KEY(TREE,      tree,      sort,          ENUM,     0,     0,         lbk_tree_sort_items)
    KEY(TREE,      tree,      verify,        BOOL,     0,     0,         NULL)
    KEY(TUNING,    tuning,    cache,         BOOL,     0,     0,         NULL)
    KEY(TUNING,    tuning,    lanes,         INT,      0,     16,        NULL)
    KEY(TUNING,    tuning,    block_queries, INT,      0,     16,        NULL)
    KEY(TUNING,    tuning,    block_vectors, INT,      0,     8,         NULL)
    KEY(TUNING,    tuning,    tile_blocks,   INT,      0,     32,        NULL)
    KEY(TUNING,    tuning,    slice,         INT,      0,     4096,      NULL)
    KEY(TUNING,    tuning,    segment_log2,  INT,      0,     24,        NULL)
    KEY(MPI,       mpi,       merge,         ENUM,     0,     0,         lbk_merge_mode_items)
    KEY(MPI,       mpi,       partition,     ENUM,     0,     0,         lbk_partition_items)
    KEY(MPI,       mpi,       balance,       ENUM,     0,     0,         lbk_balance_items)
    KEY(INDEX,     index,     path,          IN_PATH,  0,     0,         NULL)
    KEY(INDEX,     index,     rebuild,       BOOL,     0,     0,         NULL)
    KEY(RUN,       run,       checkpoint,    OUT_PATH, 0,     0,         NULL)
    KEY(RUN,       run,       checkpoint_s,  U64,      1,     INT64_MAX, NULL)
    KEY(RUN,       run,       max_hours,     DOUBLE,   0,     0,         NULL)
    KEY(RADIUS,    radius,    max_neighbors, U64,      0,     INT64_MAX, NULL)
    KEY(RADIUS,    radius,    overflow,      ENUM,     0,     0,         lbk_overflow_items)
    KEY(RADIUS,    radius,    count_only,    BOOL,     0,     0,         NULL)
    LBK_JOB_OUTPUT_LIST(OUTPUT_KEY_) /* output.<each>: OUT_PATH */
    KEY(OUTPUT,    radius,    counts,        OUT_PATH, 0,     0,         NULL)
    KEY(OUTPUT,    radius,    truncated,     OUT_PATH, 0,     0,         NULL)
};
/* clang-format on */
#define N_KEYS (sizeof lbk_job_keys / sizeof lbk_job_keys[0])
_Static_assert(N_KEYS <= LBK_JOB_MAX_KEYS, "raise LBK_JOB_MAX_KEYS");
const int lbk_job_key_count = (int)N_KEYS;

int lbk_job_find_key(int section, const char *name)
{
    for (int i = 0; i < lbk_job_key_count; i++)
        if (lbk_job_keys[i].section == section && strcmp(lbk_job_keys[i].name, name) == 0)
            return i;
    return -1;
}

int lbk_job_key_at(const lbk_job *job, const void *field)
{
    for (int i = 0; i < lbk_job_key_count; i++)
        if (lbk_job_key_cfield(job, &lbk_job_keys[i]) == field)
            return i;
    return -1;
}

void *lbk_job_key_field(lbk_job *job, const lbk_job_key_desc *d)
{
    return (char *)job + d->offset;
}

const void *lbk_job_key_cfield(const lbk_job *job, const lbk_job_key_desc *d)
{
    return (const char *)job + d->offset;
}

bool lbk_job_key_is_path(const lbk_job_key_desc *d)
{
    return d->kind == LBK_KEY_IN_PATH || d->kind == LBK_KEY_OUT_PATH;
}

void lbk_job_key_name(const lbk_job_key_desc *d, char *buf, size_t size)
{
    if (d->section == LBK_SEC_TOP)
        snprintf(buf, size, "%s", d->name);
    else
        snprintf(buf, size, "%s.%s", lbk_job_sections[d->section].name, d->name);
}

void lbk_job_join_keys(int section, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < lbk_job_key_count; i++) {
        if (lbk_job_keys[i].section != section)
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", used ? ", " : "", lbk_job_keys[i].name);
    }
}
