/* Private to the job layer: what loading a file, --set and the checks
 * share. The context says where errors point: a file parse has YAML marks
 * (line and column of every section and key it saw), --set names the
 * override, lbk_job_validate has only the job's source. */
#ifndef LBK_JOB_PARSE_H
#define LBK_JOB_PARSE_H

#include "job_schema.h"

#include <yaml.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *origin; /* job file, assignment, or the job's source */
    bool is_set;
    const char *set_prefix; /* is_set: "--set " or "option " */
    bool has_marks;
    char base_dir[LBK_PATH_MAX]; /* relative input paths resolve here; "" = as is */
    yaml_document_t *doc;
    yaml_mark_t root_mark;
    bool section_seen[LBK_SEC_COUNT];
    yaml_mark_t section_mark[LBK_SEC_COUNT];
    bool key_seen[LBK_JOB_MAX_KEYS];
    yaml_mark_t key_mark[LBK_JOB_MAX_KEYS];
} lbk_job_ctx;

/* ---- job_where.c: errors and their positions ----------------------------- */

/* Logs "FILE:LINE:COL: what", "--set ASSIGN: what" or "SOURCE: what" and
 * returns LBK_ERR_CONFIG. */
lbk_status lbk_job_fail(const lbk_job_ctx *c, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Best position for an error about the key stored at field: the key's value,
 * else its section, else the document. */
yaml_mark_t lbk_job_mark_of(const lbk_job_ctx *c, const lbk_job *job, const void *field);
yaml_mark_t lbk_job_section_mark(const lbk_job_ctx *c, int section);
bool lbk_job_key_seen(const lbk_job_ctx *c, const lbk_job *job, const void *field);
/* A libyaml parser error as a config error (or LBK_ERR_NOMEM). text is the
 * parsed file's bytes, NULL for a string (--set). */
lbk_status lbk_job_yaml_error(const lbk_job_ctx *c, const yaml_parser_t *parser, const char *text,
                              size_t len);

/* ---- job_limits.c: what keeps parsing linear ------------------------------ */

/* A job nests 3 levels (sections, keys, a list); far more is a mistake, and
 * libyaml's time grows with the square of the depth. */
#define LBK_JOB_MAX_DEPTH 32
/* Job files are a few kilobytes. */
#define LBK_JOB_MAX_BYTES (1024 * 1024)

/* A config error at the first collection nested deeper than
 * LBK_JOB_MAX_DEPTH; syntax errors are left to the loader. */
lbk_status lbk_job_check_nesting(const lbk_job_ctx *c, const char *text, size_t len);
/* The whole of f (at most LBK_JOB_MAX_BYTES, else a config error),
 * NUL-terminated, malloc'd. */
lbk_status lbk_job_read_text(const lbk_job_ctx *c, FILE *f, char **text, size_t *len);

/* ---- job_path.c: input paths relative to the job file ------------------- */

/* The absolute directory of the job file at path. */
void lbk_job_dir(const char *path, char *out, size_t size);
/* text against base_dir when it is relative and base_dir is not "", else
 * text as is. Returns false when the result does not fit. */
bool lbk_job_resolve_path(const char *base_dir, const char *text, char *out, size_t size);

/* ---- job_value.c: one YAML value into one field ------------------------- */

/* Parses n as the value of key d and stores it; the job changes only when
 * the value is valid. */
lbk_status lbk_job_apply_value(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                               const yaml_node_t *n, lbk_job *job);

/* ---- job_check.c: the rules ---------------------------------------------- */

/* Per-key ranges, shared by parsing (at the value's mark) and validation. */
lbk_status lbk_job_check_int(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                             const lbk_job_key_desc *d, int64_t v, bool overflow);
lbk_status lbk_job_check_positive(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                  double v);
/* A number a float holds: finite, within FLT_MAX (knn.radius). */
lbk_status lbk_job_check_finite(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                double v);
lbk_status lbk_job_check_list_len(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                  int len);
lbk_status lbk_job_check_device(const lbk_job_ctx *c, yaml_mark_t mark, const char *key,
                                const lbk_job_key_desc *d, int64_t v, bool overflow);
/* A delimiter that can occur inside a number or a line would make CSV
 * parsing ambiguous. */
bool lbk_job_delimiter_ok(char ch);
/* The rules that involve more than one key. */
lbk_status lbk_job_cross_check(const lbk_job_ctx *c, const lbk_job *job);

/* ---- libyaml nodes ------------------------------------------------------- */

static inline const char *lbk_job_yaml_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static inline const char *lbk_job_yaml_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a sequence";
    default: return "a scalar";
    }
}

/* YAML's null: an empty or ~/null plain scalar (a quoted "" is a string). */
static inline bool lbk_job_yaml_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = lbk_job_yaml_text(n);
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

#endif
