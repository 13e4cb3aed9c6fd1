/* Job files. One table describes every key (section, name, kind, where it
 * lives in lbk_job, its range); parsing, --set, validation and printing all
 * walk that table, so they cannot disagree about what a key means. */
#include "job.h"

#include "file_read.h"
#include "log.h"

#include <yaml.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Enum fields are written through memcpy of an int. */
_Static_assert(sizeof(lbk_format) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_metric) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_weights) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_engine) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_device_type) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_tree_split) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_tree_sort) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_merge_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(lbk_partition) == sizeof(int), "enum size");

enum {
    SEC_REFERENCE,
    SEC_QUERY,
    SEC_SYNTHETIC,
    SEC_KNN,
    SEC_DEVICE,
    SEC_TREE,
    SEC_MPI,
    SEC_OUTPUT,
    SEC_COUNT
};

static const char *const section_names[SEC_COUNT] = {
    "reference", "query", "synthetic", "knn", "device", "tree", "mpi", "output"};

typedef enum {
    K_INT,      /* int field, range [min, max] */
    K_U64,      /* uint64_t field, range [min, max] (min >= 0) */
    K_DOUBLE,   /* double field, positive and finite */
    K_BOOL,     /* bool field */
    K_ENUM,     /* enum field, names in items */
    K_HEADER,   /* int field: auto/true/false -> -1/1/0 */
    K_CHAR,     /* char field: exactly one character */
    K_IN_PATH,  /* data file: relative paths resolve against the job file */
    K_OUT_PATH, /* output file: relative paths stay relative to the cwd */
    K_DEV_LIST  /* device.list + device.list_len */
} key_kind;

typedef lbk_enum_item enum_item;

typedef struct {
    int section;
    const char *name;
    key_kind kind;
    size_t offset;
    int64_t min, max;
    const enum_item *items; /* K_ENUM: terminated by a NULL name */
} key_desc;

/* Formats are one enumeration, but points and labels each accept a subset. */
static const enum_item points_formats[] = {
    {"auto", LBK_FORMAT_AUTO}, {"fvecs", LBK_FORMAT_FVECS}, {"ivecs", LBK_FORMAT_IVECS},
    {"bvecs", LBK_FORMAT_BVECS}, {"csv", LBK_FORMAT_CSV},    {"idx", LBK_FORMAT_IDX},
    {NULL, 0}};
static const enum_item labels_formats[] = {
    {"auto", LBK_FORMAT_AUTO}, {"ivecs", LBK_FORMAT_IVECS}, {"idx", LBK_FORMAT_IDX},
    {"text", LBK_FORMAT_TEXT}, {"csv", LBK_FORMAT_CSV},     {NULL, 0}};

#define OFF(member) offsetof(lbk_job, member)
#define INPUT_KEYS(sec, spec)                                                           \
    {sec, "path", K_IN_PATH, OFF(spec.path), 0, 0, NULL},                               \
    {sec, "format", K_ENUM, OFF(spec.format), 0, 0, points_formats},                   \
    {sec, "labels", K_IN_PATH, OFF(spec.labels), 0, 0, NULL},                           \
    {sec, "labels_format", K_ENUM, OFF(spec.labels_format), 0, 0, labels_formats},     \
    {sec, "label_column", K_INT, OFF(spec.label_column), -1, INT_MAX, NULL},           \
    {sec, "delimiter", K_CHAR, OFF(spec.delimiter), 0, 0, NULL},                        \
    {sec, "header", K_HEADER, OFF(spec.header), 0, 0, NULL}

static const key_desc keys[] = {
    INPUT_KEYS(SEC_REFERENCE, reference),
    INPUT_KEYS(SEC_QUERY, query),
    {SEC_SYNTHETIC, "points", K_U64, OFF(synthetic.points), 1, INT64_MAX, NULL},
    {SEC_SYNTHETIC, "queries", K_U64, OFF(synthetic.queries), 1, INT64_MAX, NULL},
    {SEC_SYNTHETIC, "dim", K_INT, OFF(synthetic.dim), 1, 4096, NULL},
    {SEC_SYNTHETIC, "classes", K_INT, OFF(synthetic.classes), 1, 100000, NULL},
    {SEC_SYNTHETIC, "seed", K_U64, OFF(synthetic.seed), 0, INT64_MAX, NULL},
    {SEC_SYNTHETIC, "spread", K_DOUBLE, OFF(synthetic.spread), 0, 0, NULL},
    {SEC_KNN, "k", K_INT, OFF(knn.k), 1, LBK_K_MAX, NULL},
    {SEC_KNN, "metric", K_ENUM, OFF(knn.metric), 0, 0, lbk_metric_items},
    {SEC_KNN, "weights", K_ENUM, OFF(knn.weights), 0, 0, lbk_weights_items},
    {SEC_KNN, "engine", K_ENUM, OFF(knn.engine), 0, 0, lbk_engine_items},
    {SEC_DEVICE, "type", K_ENUM, OFF(device.type), 0, 0, lbk_device_type_items},
    {SEC_DEVICE, "batch", K_U64, OFF(device.batch), 0, INT64_MAX, NULL},
    {SEC_DEVICE, "groups", K_INT, OFF(device.groups), 0, 4096, NULL},
    {SEC_DEVICE, "memory_mb", K_U64, OFF(device.memory_mb), 0, INT64_MAX, NULL},
    {SEC_DEVICE, "list", K_DEV_LIST, OFF(device.list), 0, INT_MAX, NULL},
    {SEC_TREE, "split", K_ENUM, OFF(tree.split), 0, 0, lbk_tree_split_items},
    {SEC_TREE, "sort", K_ENUM, OFF(tree.sort), 0, 0, lbk_tree_sort_items},
    {SEC_TREE, "verify", K_BOOL, OFF(tree.verify), 0, 0, NULL},
    {SEC_MPI, "merge", K_ENUM, OFF(mpi.merge), 0, 0, lbk_merge_mode_items},
    {SEC_MPI, "partition", K_ENUM, OFF(mpi.partition), 0, 0, lbk_partition_items},
    {SEC_OUTPUT, "predictions", K_OUT_PATH, OFF(output.predictions), 0, 0, NULL},
    {SEC_OUTPUT, "neighbors", K_OUT_PATH, OFF(output.neighbors), 0, 0, NULL},
    {SEC_OUTPUT, "distances", K_OUT_PATH, OFF(output.distances), 0, 0, NULL},
    {SEC_OUTPUT, "report", K_OUT_PATH, OFF(output.report), 0, 0, NULL},
};
#define N_KEYS (sizeof keys / sizeof keys[0])

/* Where errors point. A file parse has marks; --set names the override;
 * lbk_job_validate has only the job's source file. */
typedef struct {
    const char *origin;
    bool is_set;
    bool has_marks;
    char base_dir[LBK_PATH_MAX]; /* relative input paths resolve here; "" = as is */
    yaml_document_t *doc;
    yaml_mark_t root_mark;
    bool section_seen[SEC_COUNT];
    yaml_mark_t section_mark[SEC_COUNT];
    bool key_seen[N_KEYS];
    yaml_mark_t key_mark[N_KEYS];
} parse_ctx;

__attribute__((format(printf, 3, 4))) static lbk_status fail(const parse_ctx *c,
                                                             yaml_mark_t mark,
                                                             const char *fmt, ...)
{
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->is_set)
        lbk_error("--set %s: %s", c->origin, what);
    else if (c->has_marks)
        lbk_error("%s:%zu:%zu: %s", c->origin, mark.line + 1, mark.column + 1, what);
    else
        lbk_error("%s: %s", c->origin, what);
    return LBK_ERR_CONFIG;
}

static void *field(lbk_job *job, const key_desc *d) { return (char *)job + d->offset; }

static const void *cfield(const lbk_job *job, const key_desc *d)
{
    return (const char *)job + d->offset;
}

static int find_section(const char *name)
{
    for (int s = 0; s < SEC_COUNT; s++)
        if (strcmp(section_names[s], name) == 0)
            return s;
    return -1;
}

static int find_key(int section, const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].section == section && strcmp(keys[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* "a, b, c": the allowed names, for messages that should tell the fix. */
static void join_enum_names(const enum_item *items, char *buf, size_t size)
{
    buf[0] = '\0';
    for (const enum_item *it = items; it->name; it++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", it == items ? "" : ", ", it->name);
    }
}

static void join_section_keys(int section, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].section != section)
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", used ? ", " : "", keys[i].name);
    }
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a sequence";
    default: return "a scalar";
    }
}

static const char *scalar_text(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* YAML's null: an empty or ~/null plain scalar (a quoted "" is a string). */
static bool is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = scalar_text(n);
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static const char *expected_text(const key_desc *d)
{
    switch (d->kind) {
    case K_INT:
    case K_U64: return "an integer";
    case K_DOUBLE: return "a number";
    case K_BOOL: return "true or false";
    case K_ENUM: return "a name";
    case K_HEADER: return "auto, true or false";
    case K_CHAR: return "one character";
    case K_IN_PATH:
    case K_OUT_PATH: return "a path";
    case K_DEV_LIST: return "a sequence of device indices";
    }
    return "?";
}

/* Decimal integers only: "5.5", "1e3", "0x10", " 5" are not integers here.
 * Returns false for non-integers; *overflow for values beyond int64. */
static bool parse_int64(const char *s, int64_t *out, bool *overflow)
{
    *overflow = false;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE) {
        *overflow = true;
        return false;
    }
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0) {
        *out = true;
        return true;
    }
    if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0) {
        *out = false;
        return true;
    }
    return false;
}

static lbk_status range_error(const parse_ctx *c, yaml_mark_t mark, const char *key,
                              const key_desc *d)
{
    if (d->max == INT64_MAX || (d->max == INT_MAX && d->kind != K_U64)) {
        if (d->min == 0)
            return fail(c, mark, "%s must not be negative", key);
        return fail(c, mark, "%s must be at least %" PRId64, key, d->min);
    }
    return fail(c, mark, "%s must be between %" PRId64 " and %" PRId64, key, d->min, d->max);
}

/* A point or label file must never be NUL-truncated silently. */
static lbk_status check_no_nul(const parse_ctx *c, const yaml_node_t *n, const char *key)
{
    if (strlen(scalar_text(n)) != n->data.scalar.length)
        return fail(c, n->start_mark, "%s contains a NUL character", key);
    return LBK_OK;
}

static bool is_absolute(const char *p) { return p[0] == '/'; }

/* dir + "/" + rel, without the "./" noise of a relative rel. Returns false
 * when the result does not fit. */
static bool join_path(const char *dir, const char *rel, char *out, size_t size)
{
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (strcmp(rel, ".") == 0 || rel[0] == '\0')
        return (size_t)snprintf(out, size, "%s", dir) < size;
    size_t n = strlen(dir);
    const char *sep = (n > 0 && dir[n - 1] == '/') ? "" : "/";
    return (size_t)snprintf(out, size, "%s%s%s", dir, sep, rel) < size;
}

static lbk_status set_path(const parse_ctx *c, const key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    char *dst = field(job, d);
    if (is_null(n)) {
        dst[0] = '\0';
        return LBK_OK;
    }
    lbk_status st = check_no_nul(c, n, key);
    if (st != LBK_OK)
        return st;
    const char *text = scalar_text(n);
    char resolved[LBK_PATH_MAX];
    bool fits;
    if (d->kind == K_IN_PATH && text[0] != '\0' && !is_absolute(text) && c->base_dir[0])
        fits = join_path(c->base_dir, text, resolved, sizeof resolved);
    else
        fits = (size_t)snprintf(resolved, sizeof resolved, "%s", text) < sizeof resolved;
    if (!fits)
        return fail(c, n->start_mark, "%s is too long (at most %d bytes after resolving)", key,
                    LBK_PATH_MAX - 1);
    memcpy(dst, resolved, strlen(resolved) + 1);
    return LBK_OK;
}

/* A delimiter that can occur inside a number or a line would make CSV
 * parsing ambiguous. */
static bool delimiter_ok(char ch)
{
    return ch != '\0' && !strchr("\"\r\n.+-0123456789eE", ch);
}

static lbk_status set_dev_list(const parse_ctx *c, const key_desc *d, const yaml_node_t *n,
                               const char *key, lbk_job *job)
{
    if (is_null(n)) {
        job->device.list_len = 0;
        return LBK_OK;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(c, n->start_mark, "%s must be a sequence of device indices, e.g. [0, 1], not %s",
                    key, node_kind(n));
    int len = 0;
    int list[LBK_MAX_DEVICE_LIST];
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        if (len == LBK_MAX_DEVICE_LIST)
            return fail(c, item->start_mark, "%s has more than %d entries", key,
                        LBK_MAX_DEVICE_LIST);
        if (item->type != YAML_SCALAR_NODE)
            return fail(c, item->start_mark, "%s entries must be integers, not %s", key,
                        node_kind(item));
        int64_t v = 0;
        bool overflow;
        if (!parse_int64(scalar_text(item), &v, &overflow) && !overflow)
            return fail(c, item->start_mark, "%s entries must be integers, not '%.64s'", key,
                        scalar_text(item));
        if (overflow || v < d->min || v > d->max)
            return fail(c, item->start_mark, "%s entries must be device indices >= 0", key);
        list[len++] = (int)v;
    }
    memcpy(job->device.list, list, sizeof(int) * (size_t)len);
    job->device.list_len = len;
    return LBK_OK;
}

/* Parse one value node for key d and store it. The job is changed only when
 * the value is valid. */
static lbk_status apply_value(const parse_ctx *c, const key_desc *d, const yaml_node_t *n,
                              lbk_job *job)
{
    char key[64];
    snprintf(key, sizeof key, "%s.%s", section_names[d->section], d->name);

    if (d->kind == K_IN_PATH || d->kind == K_OUT_PATH) {
        if (n->type != YAML_SCALAR_NODE)
            return fail(c, n->start_mark, "%s must be a path, not %s", key, node_kind(n));
        return set_path(c, d, n, key, job);
    }
    if (d->kind == K_DEV_LIST)
        return set_dev_list(c, d, n, key, job);

    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n->start_mark, "%s must be %s, not %s", key, expected_text(d),
                    node_kind(n));
    if (is_null(n))
        return fail(c, n->start_mark, "%s has no value (expected %s)", key, expected_text(d));
    lbk_status st = check_no_nul(c, n, key);
    if (st != LBK_OK)
        return st;
    const char *s = scalar_text(n);

    switch (d->kind) {
    case K_INT:
    case K_U64: {
        int64_t v = 0;
        bool overflow;
        if (!parse_int64(s, &v, &overflow) && !overflow)
            return fail(c, n->start_mark, "%s must be an integer, not '%.64s'", key, s);
        if (overflow || v < d->min || v > d->max)
            return range_error(c, n->start_mark, key, d);
        if (d->kind == K_INT)
            *(int *)field(job, d) = (int)v;
        else
            *(uint64_t *)field(job, d) = (uint64_t)v;
        return LBK_OK;
    }
    case K_DOUBLE: {
        char *end = NULL;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || *end != '\0' || isspace((unsigned char)s[0]))
            return fail(c, n->start_mark, "%s must be a number, not '%.64s'", key, s);
        if (!isfinite(v) || !(v > 0.0))
            return fail(c, n->start_mark, "%s must be a positive finite number", key);
        *(double *)field(job, d) = v;
        return LBK_OK;
    }
    case K_BOOL: {
        bool v;
        if (!parse_bool(s, &v))
            return fail(c, n->start_mark, "%s must be true or false (or yes/no), not '%.64s'",
                        key, s);
        *(bool *)field(job, d) = v;
        return LBK_OK;
    }
    case K_HEADER: {
        bool v;
        int h;
        if (strcmp(s, "auto") == 0)
            h = -1;
        else if (parse_bool(s, &v))
            h = v ? 1 : 0;
        else
            return fail(c, n->start_mark, "%s must be auto, true or false, not '%.64s'", key, s);
        *(int *)field(job, d) = h;
        return LBK_OK;
    }
    case K_ENUM: {
        for (const enum_item *it = d->items; it->name; it++) {
            if (strcmp(it->name, s) == 0) {
                memcpy(field(job, d), &it->value, sizeof(int));
                return LBK_OK;
            }
        }
        char allowed[256];
        join_enum_names(d->items, allowed, sizeof allowed);
        return fail(c, n->start_mark, "%s must be one of %s; got '%.64s'", key, allowed, s);
    }
    case K_CHAR:
        if (strlen(s) != 1)
            return fail(c, n->start_mark, "%s must be exactly one character, not '%.64s'", key,
                        s);
        if (!delimiter_ok(s[0]))
            return fail(c, n->start_mark,
                        "%s cannot be '%c': it can occur inside numbers or lines", key, s[0]);
        *(char *)field(job, d) = s[0];
        return LBK_OK;
    default: break;
    }
    return fail(c, n->start_mark, "%s: unhandled key kind (a bug)", key);
}

static lbk_status apply_section(parse_ctx *c, int section, const yaml_node_t *map, lbk_job *job)
{
    if (is_null(map))
        return LBK_OK;
    if (map->type != YAML_MAPPING_NODE)
        return fail(c, map->start_mark, "section '%s' must be a mapping, not %s",
                    section_names[section], node_kind(map));
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return fail(c, k->start_mark, "keys in section '%s' must be names, not %s",
                        section_names[section], node_kind(k));
        int idx = find_key(section, scalar_text(k));
        if (idx < 0) {
            char allowed[256];
            join_section_keys(section, allowed, sizeof allowed);
            return fail(c, k->start_mark, "unknown key '%.64s' in section '%s' (keys: %s)",
                        scalar_text(k), section_names[section], allowed);
        }
        if (c->key_seen[idx])
            return fail(c, k->start_mark, "duplicate key '%s.%s'", section_names[section],
                        keys[idx].name);
        c->key_seen[idx] = true;
        c->key_mark[idx] = v->start_mark;
        lbk_status st = apply_value(c, &keys[idx], v, job);
        if (st != LBK_OK)
            return st;
    }
    return LBK_OK;
}

static lbk_status apply_root(parse_ctx *c, const yaml_node_t *root, lbk_job *job)
{
    c->root_mark = root->start_mark;
    if (is_null(root))
        return LBK_OK;
    if (root->type != YAML_MAPPING_NODE)
        return fail(c, root->start_mark,
                    "a job must be a mapping of sections (reference, query, synthetic, knn, "
                    "device, tree, mpi, output), not %s",
                    node_kind(root));
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return fail(c, k->start_mark, "section names must be names, not %s", node_kind(k));
        int sec = find_section(scalar_text(k));
        if (sec < 0)
            return fail(c, k->start_mark,
                        "unknown key '%.64s' (sections: reference, query, synthetic, knn, "
                        "device, tree, mpi, output)",
                        scalar_text(k));
        if (c->section_seen[sec])
            return fail(c, k->start_mark, "duplicate key '%s'", section_names[sec]);
        c->section_seen[sec] = true;
        c->section_mark[sec] = is_null(v) ? k->start_mark : v->start_mark;
        lbk_status st = apply_section(c, sec, v, job);
        if (st != LBK_OK)
            return st;
    }
    return LBK_OK;
}

/* Best position for a cross-field error about key (section, name): the key's
 * value, else its section, else the document. */
static yaml_mark_t mark_of(const parse_ctx *c, int section, const char *name)
{
    int idx = name ? find_key(section, name) : -1;
    if (idx >= 0 && c->key_seen[idx])
        return c->key_mark[idx];
    if (c->section_seen[section])
        return c->section_mark[section];
    return c->root_mark;
}

static lbk_status check_input(const parse_ctx *c, const lbk_input_spec *in, int sec)
{
    const char *name = section_names[sec];
    if (in->labels[0] && !in->path[0])
        return fail(c, mark_of(c, sec, "labels"), "%s.labels given without %s.path", name, name);
    if (in->label_column >= 0) {
        if (in->format != LBK_FORMAT_AUTO && in->format != LBK_FORMAT_CSV)
            return fail(c, mark_of(c, sec, "label_column"),
                        "%s.label_column needs CSV points, but %s.format is %s", name, name,
                        lbk_format_name(in->format));
        if (in->labels[0])
            return fail(c, mark_of(c, sec, "label_column"),
                        "%s.label_column and %s.labels both give the labels; use one", name,
                        name);
    }
    return LBK_OK;
}

/* Checks that involve more than one key. Run after a file parse (with
 * positions) and by lbk_job_validate (without). */
static lbk_status cross_check(const parse_ctx *c, const lbk_job *job)
{
    lbk_status st = LBK_OK;
    if (job->query.path[0] && !job->reference.path[0])
        return fail(c, mark_of(c, SEC_QUERY, "path"),
                    "query.path given without reference.path (the synthetic reference "
                    "brings its own queries)");
    if (job->reference.path[0] && !job->query.path[0])
        return fail(c, mark_of(c, SEC_REFERENCE, NULL),
                    "reference.path given without query.path");
    if ((st = check_input(c, &job->reference, SEC_REFERENCE)) != LBK_OK)
        return st;
    if ((st = check_input(c, &job->query, SEC_QUERY)) != LBK_OK)
        return st;
    if (job->output.predictions[0] && job->reference.path[0] && !job->reference.labels[0] &&
        job->reference.label_column < 0)
        return fail(c, mark_of(c, SEC_OUTPUT, "predictions"),
                    "output.predictions needs reference labels (reference.labels or "
                    "reference.label_column)");
    /* Two outputs in one file would be written over each other and then
     * renamed into place twice: a garbled file from a failed run. */
    const char *const out_names[] = {"predictions", "neighbors", "distances", "report"};
    const char *const out_paths[] = {job->output.predictions, job->output.neighbors,
                                     job->output.distances, job->output.report};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++)
            if (out_paths[i][0] && strcmp(out_paths[i], out_paths[j]) == 0)
                return fail(c, mark_of(c, SEC_OUTPUT, out_names[i]),
                            "output.%s and output.%s name the same file '%.64s'",
                            out_names[j], out_names[i], out_paths[i]);
    if ((uint64_t)job->synthetic.classes > job->synthetic.points) {
        const char *at = c->has_marks && c->key_seen[find_key(SEC_SYNTHETIC, "classes")]
                             ? "classes"
                             : "points";
        return fail(c, mark_of(c, SEC_SYNTHETIC, at),
                    "synthetic.classes (%d) must not exceed synthetic.points (%" PRIu64 ")",
                    job->synthetic.classes, job->synthetic.points);
    }
    return LBK_OK;
}

void lbk_job_defaults(lbk_job *job)
{
    memset(job, 0, sizeof *job);
    snprintf(job->source, sizeof job->source, "%s", "<built-in default>");
    lbk_input_spec *inputs[2] = {&job->reference, &job->query};
    for (int i = 0; i < 2; i++) {
        inputs[i]->format = LBK_FORMAT_AUTO;
        inputs[i]->labels_format = LBK_FORMAT_AUTO;
        inputs[i]->label_column = -1;
        inputs[i]->delimiter = ',';
        inputs[i]->header = -1;
    }
    job->synthetic.points = 100000;
    job->synthetic.queries = 10000;
    job->synthetic.dim = 16;
    job->synthetic.classes = 10;
    job->synthetic.seed = 42;
    job->synthetic.spread = 2.0;
    job->knn.k = 5;
    job->knn.metric = LBK_METRIC_L2;
    job->knn.weights = LBK_WEIGHTS_UNIFORM;
    job->knn.engine = LBK_ENGINE_AUTO;
    job->device.type = LBK_DEVICE_ANY;
    job->tree.split = LBK_SPLIT_ROUND_ROBIN;
    job->tree.sort = LBK_SORT_AUTO;
    job->tree.verify = false;
    job->mpi.merge = LBK_MERGE_REDUCE;
    job->mpi.partition = LBK_PARTITION_SHARD;
}

/* The absolute directory of the job file, so that resolved input paths stay
 * right whatever directory the job is later printed to or run from. */
static void job_dir(const char *path, char *out, size_t size)
{
    char cwd[LBK_PATH_MAX];
    char dir[LBK_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (is_absolute(dir) || !getcwd(cwd, sizeof cwd) || !join_path(cwd, dir, out, size))
        snprintf(out, size, "%s", dir);
}

/* libyaml's reader errors (bad encoding) carry only a byte offset; turn it
 * into a line and column like every other error. f may be NULL (--set). */
static yaml_mark_t mark_at_offset(FILE *f, size_t offset)
{
    yaml_mark_t m = {0, 0, 0};
    if (!f || fseek(f, 0, SEEK_SET) != 0)
        return m;
    for (size_t i = 0; i < offset; i++) {
        int ch = getc(f);
        if (ch == EOF)
            break;
        if (ch == '\n') {
            m.line++;
            m.column = 0;
        } else {
            m.column++;
        }
    }
    return m;
}

static lbk_status yaml_syntax_error(const parse_ctx *c, const yaml_parser_t *parser, FILE *f)
{
    if (parser->error == YAML_MEMORY_ERROR) {
        lbk_error("%s: out of memory while parsing", c->origin);
        return LBK_ERR_NOMEM;
    }
    const char *problem = parser->problem ? parser->problem : "unknown error";
    if (parser->error == YAML_READER_ERROR)
        return fail(c, mark_at_offset(f, parser->problem_offset), "invalid YAML: %s", problem);
    if (parser->context)
        return fail(c, parser->problem_mark, "invalid YAML: %s %s (line %zu)", problem,
                    parser->context, parser->context_mark.line + 1);
    return fail(c, parser->problem_mark, "invalid YAML: %s", problem);
}

lbk_status lbk_job_load(const char *path, lbk_job *job)
{
    lbk_status st = LBK_OK;
    FILE *f = NULL;
    yaml_parser_t parser;
    bool parser_ready = false;
    yaml_document_t doc;
    bool doc_ready = false;
    parse_ctx *c = NULL;

    lbk_job_defaults(job);
    if (strlen(path) >= sizeof job->source) {
        lbk_error("job file path is too long (at most %d bytes): %.64s...", LBK_PATH_MAX - 1,
                  path);
        st = LBK_ERR_CONFIG;
        goto cleanup;
    }
    snprintf(job->source, sizeof job->source, "%s", path);
    c = calloc(1, sizeof *c);
    if (!c) {
        lbk_error("out of memory loading %s", path);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    c->origin = path;
    c->has_marks = true;
    job_dir(path, c->base_dir, sizeof c->base_dir);

    if ((st = lbk_open_for_reading(path, "job file", LBK_ERR_CONFIG, &f)) != LBK_OK)
        goto cleanup;
    if (!yaml_parser_initialize(&parser)) {
        lbk_error("%s: cannot initialise the YAML parser", path);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    parser_ready = true;
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        st = yaml_syntax_error(c, &parser, f);
        goto cleanup;
    }
    doc_ready = true;
    c->doc = &doc;

    /* An empty file (or comments only) has no document: all defaults. */
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {
        st = apply_root(c, root, job);
        if (st != LBK_OK)
            goto cleanup;
    }

    /* A second document would otherwise be ignored without a word. */
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
        st = yaml_syntax_error(c, &parser, f);
        goto cleanup;
    }
    const yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
    yaml_mark_t extra_mark = extra.start_mark;
    yaml_document_delete(&extra);
    if (extra_root) {
        st = fail(c, extra_mark, "a job file holds one YAML document; found a second");
        goto cleanup;
    }
    st = cross_check(c, job);

cleanup:
    if (doc_ready)
        yaml_document_delete(&doc);
    if (parser_ready)
        yaml_parser_delete(&parser);
    if (f)
        fclose(f);
    free(c);
    return st;
}

lbk_status lbk_job_set(lbk_job *job, const char *assignment)
{
    lbk_status st = LBK_OK;
    yaml_parser_t parser;
    bool parser_ready = false;
    yaml_document_t doc;
    bool doc_ready = false;
    parse_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        lbk_error("--set %s: out of memory", assignment);
        return LBK_ERR_NOMEM;
    }
    c->origin = assignment;
    c->is_set = true;
    yaml_mark_t nowhere = {0, 0, 0};

    const char *eq = strchr(assignment, '=');
    if (!eq) {
        st = fail(c, nowhere, "expected SECTION.KEY=VALUE, e.g. knn.k=7");
        goto cleanup;
    }
    char name[128];
    size_t name_len = (size_t)(eq - assignment);
    if (name_len >= sizeof name) {
        st = fail(c, nowhere, "unknown key '%.64s...'", assignment);
        goto cleanup;
    }
    memcpy(name, assignment, name_len);
    name[name_len] = '\0';
    char *dot = strchr(name, '.');
    if (!dot) {
        st = fail(c, nowhere, "expected SECTION.KEY=VALUE, e.g. knn.k=7; got key '%s'", name);
        goto cleanup;
    }
    *dot = '\0';
    int sec = find_section(name);
    int idx = sec >= 0 ? find_key(sec, dot + 1) : -1;
    if (idx < 0) {
        *dot = '.';
        st = fail(c, nowhere, "unknown key '%s'", name);
        goto cleanup;
    }
    const key_desc *d = &keys[idx];
    const char *value = eq + 1;

    /* Paths are taken literally: YAML would read "#" or ": " in them as
     * syntax, and a shell user does not expect that. */
    if (d->kind == K_IN_PATH || d->kind == K_OUT_PATH) {
        yaml_node_t node;
        memset(&node, 0, sizeof node);
        node.type = YAML_SCALAR_NODE;
        node.data.scalar.value = (yaml_char_t *)value;
        node.data.scalar.length = strlen(value);
        node.data.scalar.style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        st = apply_value(c, d, &node, job);
        goto cleanup;
    }

    if (!yaml_parser_initialize(&parser)) {
        st = fail(c, nowhere, "cannot initialise the YAML parser");
        goto cleanup;
    }
    parser_ready = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)value, strlen(value));
    if (!yaml_parser_load(&parser, &doc)) {
        st = yaml_syntax_error(c, &parser, NULL);
        goto cleanup;
    }
    doc_ready = true;
    c->doc = &doc;
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {
        st = apply_value(c, d, root, job);
    } else {
        yaml_node_t empty;
        memset(&empty, 0, sizeof empty);
        empty.type = YAML_SCALAR_NODE;
        empty.data.scalar.value = (yaml_char_t *)"";
        empty.data.scalar.style = YAML_PLAIN_SCALAR_STYLE;
        st = apply_value(c, d, &empty, job);
    }

cleanup:
    if (doc_ready)
        yaml_document_delete(&doc);
    if (parser_ready)
        yaml_parser_delete(&parser);
    free(c);
    return st;
}

static bool enum_known(const enum_item *items, int v)
{
    for (const enum_item *it = items; it->name; it++)
        if (it->value == v)
            return true;
    return false;
}

/* Every per-key rule again, on the struct: the job may have been built or
 * changed by code rather than parsed. */
static lbk_status check_fields(const parse_ctx *c, const lbk_job *job)
{
    yaml_mark_t none = {0, 0, 0};
    for (size_t i = 0; i < N_KEYS; i++) {
        const key_desc *d = &keys[i];
        char key[64];
        snprintf(key, sizeof key, "%s.%s", section_names[d->section], d->name);
        const void *p = cfield(job, d);
        switch (d->kind) {
        case K_INT: {
            int v = *(const int *)p;
            if (v < d->min || v > d->max)
                return range_error(c, none, key, d);
            break;
        }
        case K_U64: {
            uint64_t v = *(const uint64_t *)p;
            if (v < (uint64_t)d->min || v > (uint64_t)d->max)
                return range_error(c, none, key, d);
            break;
        }
        case K_DOUBLE: {
            double v = *(const double *)p;
            if (!isfinite(v) || !(v > 0.0))
                return fail(c, none, "%s must be a positive finite number", key);
            break;
        }
        case K_ENUM: {
            int v;
            memcpy(&v, p, sizeof v);
            if (!enum_known(d->items, v))
                return fail(c, none, "%s has an invalid value (%d)", key, v);
            break;
        }
        case K_HEADER: {
            int v = *(const int *)p;
            if (v < -1 || v > 1)
                return fail(c, none, "%s has an invalid value (%d)", key, v);
            break;
        }
        case K_CHAR:
            if (!delimiter_ok(*(const char *)p))
                return fail(c, none, "%s cannot be '%c'", key, *(const char *)p);
            break;
        case K_IN_PATH:
        case K_OUT_PATH:
            if (memchr(p, '\0', LBK_PATH_MAX) == NULL)
                return fail(c, none, "%s is too long", key);
            break;
        case K_DEV_LIST:
            if (job->device.list_len < 0 || job->device.list_len > LBK_MAX_DEVICE_LIST)
                return fail(c, none, "%s has more than %d entries", key, LBK_MAX_DEVICE_LIST);
            for (int j = 0; j < job->device.list_len; j++)
                if (job->device.list[j] < 0)
                    return fail(c, none, "%s entries must be device indices >= 0", key);
            break;
        case K_BOOL: break;
        }
    }
    return LBK_OK;
}

lbk_status lbk_job_validate(const lbk_job *job)
{
    parse_ctx c;
    memset(&c, 0, sizeof c);
    c.origin = job->source[0] ? job->source : "<job>";
    lbk_status st = check_fields(&c, job);
    if (st != LBK_OK)
        return st;
    return cross_check(&c, job);
}

/* The code point of the well-formed UTF-8 sequence at p, and its length in
 * *len; 0 with *len = 0 when the bytes there are not well-formed UTF-8
 * (overlong forms, surrogates and values past U+10FFFF included). */
static uint32_t utf8_decode(const unsigned char *p, int *len)
{
    uint32_t cp;
    int n;
    *len = 0;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        n = 2;
        cp = p[0] & 0x1Fu;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        n = 3;
        cp = p[0] & 0x0Fu;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        n = 4;
        cp = p[0] & 0x07u;
    } else {
        return 0;
    }
    /* The NUL terminator is not a continuation byte, so this stops there. */
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    *len = n;
    return cp;
}

/* What a YAML reader takes literally inside a double-quoted scalar: libyaml
 * rejects C1 controls and U+FFFE/U+FFFF in the stream, and folds the line
 * breaks NEL, LS and PS; the BOM is left out to be safe. */
static bool yaml_printable(uint32_t cp)
{
    return (cp >= 0xA0 && cp <= 0xFFFD && cp != 0x2028 && cp != 0x2029 && cp != 0xFEFF) ||
           cp >= 0x10000;
}

/* YAML double-quoted scalar, so that the report and `check` are valid YAML
 * whatever the bytes. Every Unicode path loads back unchanged (escaped code
 * points are exact). Bytes that are not UTF-8 at all cannot be spelt in
 * YAML: they become \xNN, i.e. U+00NN, and load back as a different path;
 * job files cannot hold such paths either, only --set can. */
void lbk_yaml_print_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p < 0x80) {
            switch (*p) {
            case '"': fputs("\\\"", f); break;
            case '\\': fputs("\\\\", f); break;
            case '\t': fputs("\\t", f); break;
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            default:
                if (*p < 0x20 || *p == 0x7f)
                    fprintf(f, "\\x%02X", *p);
                else
                    fputc(*p, f);
            }
            p++;
            continue;
        }
        int len = 0;
        const uint32_t cp = utf8_decode(p, &len);
        if (len == 0) {
            fprintf(f, "\\x%02X", *p);
            p++;
        } else if (yaml_printable(cp)) {
            fwrite(p, 1, (size_t)len, f);
            p += len;
        } else {
            fprintf(f, "\\u%04" PRIX32, cp);  /* all non-printables are in the BMP */
            p += len;
        }
    }
    fputc('"', f);
}

static void print_value(FILE *f, const lbk_job *job, const key_desc *d)
{
    const void *p = cfield(job, d);
    switch (d->kind) {
    case K_INT: fprintf(f, "%d", *(const int *)p); break;
    case K_U64: fprintf(f, "%" PRIu64, *(const uint64_t *)p); break;
    case K_DOUBLE: fprintf(f, "%.17g", *(const double *)p); break;
    case K_BOOL: fputs(*(const bool *)p ? "true" : "false", f); break;
    case K_HEADER: {
        int h = *(const int *)p;
        fputs(h < 0 ? "auto" : h ? "true" : "false", f);
        break;
    }
    case K_ENUM: {
        int v;
        memcpy(&v, p, sizeof v);
        const char *name = "\"?\"";
        for (const enum_item *it = d->items; it->name; it++)
            if (it->value == v)
                name = it->name;
        fputs(name, f);
        break;
    }
    case K_CHAR: {
        char s[2] = {*(const char *)p, '\0'};
        lbk_yaml_print_string(f, s);
        break;
    }
    case K_IN_PATH:
    case K_OUT_PATH: lbk_yaml_print_string(f, (const char *)p); break;
    case K_DEV_LIST:
        fputc('[', f);
        for (int j = 0; j < job->device.list_len && j < LBK_MAX_DEVICE_LIST; j++)
            fprintf(f, "%s%d", j ? ", " : "", job->device.list[j]);
        fputc(']', f);
        break;
    }
}

void lbk_job_print(const lbk_job *job, void *file, int indent)
{
    FILE *f = file;
    if (indent < 0)
        indent = 0;
    int section = -1;
    for (size_t i = 0; i < N_KEYS; i++) {
        const key_desc *d = &keys[i];
        if (d->section != section) {
            section = d->section;
            fprintf(f, "%*s%s:\n", indent, "", section_names[section]);
        }
        fprintf(f, "%*s  %s: ", indent, "", d->name);
        print_value(f, job, d);
        fputc('\n', f);
    }
}
