/* One YAML value node into one field of the job, by the key's kind. Every
 * value is checked in full before the field is written, so a rejected value
 * leaves the job as it was. */
#include "job_parse.h"

#include "try.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef lbk_status (*scalar_setter)(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                                    const yaml_node_t *n, const char *key, lbk_job *job);

static const char *expected_text(const lbk_job_key_desc *d)
{
    switch (d->kind) {
    case LBK_KEY_INT:
    case LBK_KEY_U64: return "an integer";
    case LBK_KEY_DOUBLE:
    case LBK_KEY_REAL: return "a number or none";
    case LBK_KEY_BOOL: return "true or false";
    case LBK_KEY_ENUM: return "a name";
    case LBK_KEY_HEADER: return "auto, true or false";
    case LBK_KEY_CHAR: return "one character";
    case LBK_KEY_IN_PATH:
    case LBK_KEY_OUT_PATH: return "a path";
    case LBK_KEY_NAME: return "a name";
    case LBK_KEY_DEV_LIST: return "a sequence of device indices";
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

/* A point or label file must never be NUL-truncated silently. */
static lbk_status check_no_nul(const lbk_job_ctx *c, const yaml_node_t *n, const char *key)
{
    if (strlen(lbk_job_yaml_text(n)) != n->data.scalar.length)
        return lbk_job_fail(c, n->start_mark, "%s contains a NUL character", key);
    return LBK_OK;
}

/* A path's or name's text: a scalar (`what` names the kind in the
 * message) without NUL; *text NULL for an empty value, which clears dst. */
static lbk_status scalar_text(const lbk_job_ctx *c, const yaml_node_t *n, const char *key,
                              const char *what, char *dst, const char **text)
{
    *text = NULL;
    if (n->type != YAML_SCALAR_NODE)
        return lbk_job_fail(c, n->start_mark, "%s must be %s, not %s", key, what,
                            lbk_job_yaml_kind(n));
    if (lbk_job_yaml_is_null(n)) {
        dst[0] = '\0';
        return LBK_OK;
    }
    LBK_TRY(check_no_nul(c, n, key));
    *text = lbk_job_yaml_text(n);
    return LBK_OK;
}

static lbk_status set_path(const lbk_job_ctx *c, const lbk_job_key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    char *dst = lbk_job_key_field(job, d);
    const char *text = NULL;
    LBK_TRY(scalar_text(c, n, key, "a path", dst, &text));
    if (!text)
        return LBK_OK;
    char resolved[LBK_PATH_MAX];
    const char *base = d->kind == LBK_KEY_IN_PATH ? c->base_dir : "";
    if (!lbk_job_resolve_path(base, text, resolved, sizeof resolved))
        return lbk_job_fail(c, n->start_mark, "%s is too long (at most %d bytes after resolving)",
                            key, LBK_PATH_MAX - 1);
    memcpy(dst, resolved, strlen(resolved) + 1);
    return LBK_OK;
}

/* A name inside a file, taken as written (no path resolution). */
static lbk_status set_name(const lbk_job_ctx *c, const lbk_job_key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    char *dst = lbk_job_key_field(job, d);
    const char *text = NULL;
    LBK_TRY(scalar_text(c, n, key, "a name", dst, &text));
    if (!text)
        return LBK_OK;
    const size_t len = strlen(text);
    if (len >= LBK_NAME_MAX)
        return lbk_job_fail(c, n->start_mark, "%s is too long (at most %d bytes)", key,
                            LBK_NAME_MAX - 1);
    memcpy(dst, text, len + 1);
    return LBK_OK;
}

static lbk_status set_dev_list(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                               const yaml_node_t *n, const char *key, lbk_job *job)
{
    if (lbk_job_yaml_is_null(n)) {
        job->device.list_len = 0;
        return LBK_OK;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return lbk_job_fail(c, n->start_mark,
                            "%s must be a sequence of device indices, e.g. [0, 1], not %s", key,
                            lbk_job_yaml_kind(n));
    int len = 0;
    int list[LBK_JOB_MAX_DEVICE_LIST];
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        LBK_TRY(lbk_job_check_list_len(c, item->start_mark, key, len + 1));
        if (item->type != YAML_SCALAR_NODE)
            return lbk_job_fail(c, item->start_mark, "%s entries must be integers, not %s", key,
                                lbk_job_yaml_kind(item));
        int64_t v = 0;
        bool overflow;
        if (!parse_int64(lbk_job_yaml_text(item), &v, &overflow) && !overflow)
            return lbk_job_fail(c, item->start_mark, "%s entries must be integers, not '%.64s'",
                                key, lbk_job_yaml_text(item));
        LBK_TRY(lbk_job_check_device(c, item->start_mark, key, d, v, overflow));
        list[len++] = (int)v;
    }
    memcpy(job->device.list, list, sizeof(int) * (size_t)len);
    job->device.list_len = len;
    return LBK_OK;
}

static lbk_status set_integer(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                              const yaml_node_t *n, const char *key, lbk_job *job)
{
    const char *s = lbk_job_yaml_text(n);
    int64_t v = 0;
    bool overflow;
    if (!parse_int64(s, &v, &overflow) && !overflow)
        return lbk_job_fail(c, n->start_mark, "%s must be an integer, not '%.64s'", key, s);
    LBK_TRY(lbk_job_check_int(c, n->start_mark, key, d, v, overflow));
    if (d->kind == LBK_KEY_INT)
        *(int *)lbk_job_key_field(job, d) = (int)v;
    else
        *(uint64_t *)lbk_job_key_field(job, d) = (uint64_t)v;
    return LBK_OK;
}

static lbk_status set_double(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                             const yaml_node_t *n, const char *key, lbk_job *job)
{
    const char *s = lbk_job_yaml_text(n);
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || isspace((unsigned char)s[0]))
        return lbk_job_fail(c, n->start_mark, "%s must be a number, not '%.64s'", key, s);
    LBK_TRY(lbk_job_check_positive(c, n->start_mark, key, v));
    *(double *)lbk_job_key_field(job, d) = v;
    return LBK_OK;
}

static lbk_status set_real(const lbk_job_ctx *c, const lbk_job_key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    const char *s = lbk_job_yaml_text(n);
    if (strcmp(s, "none") == 0) { /* as printed: not given */
        *(double *)lbk_job_key_field(job, d) = NAN;
        return LBK_OK;
    }
    char *end = NULL;
    const double v = strtod(s, &end);
    if (end == s || *end != '\0' || isspace((unsigned char)s[0]))
        return lbk_job_fail(c, n->start_mark, "%s must be a number, not '%.64s'", key, s);
    LBK_TRY(lbk_job_check_finite(c, n->start_mark, key, v));
    *(double *)lbk_job_key_field(job, d) = v;
    return LBK_OK;
}

static lbk_status set_bool(const lbk_job_ctx *c, const lbk_job_key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    bool v;
    if (!parse_bool(lbk_job_yaml_text(n), &v))
        return lbk_job_fail(c, n->start_mark, "%s must be true or false (or yes/no), not '%.64s'",
                            key, lbk_job_yaml_text(n));
    *(bool *)lbk_job_key_field(job, d) = v;
    return LBK_OK;
}

static lbk_status set_header(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                             const yaml_node_t *n, const char *key, lbk_job *job)
{
    const char *s = lbk_job_yaml_text(n);
    bool v;
    int h;
    if (strcmp(s, "auto") == 0)
        h = -1;
    else if (parse_bool(s, &v))
        h = v ? 1 : 0;
    else
        return lbk_job_fail(c, n->start_mark, "%s must be auto, true or false, not '%.64s'", key,
                            s);
    *(int *)lbk_job_key_field(job, d) = h;
    return LBK_OK;
}

static lbk_status set_enum(const lbk_job_ctx *c, const lbk_job_key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    const lbk_enum_item *it = lbk_enum_find_name(d->items, lbk_job_yaml_text(n));
    if (!it) {
        char allowed[256];
        lbk_enum_join_names(d->items, allowed, sizeof allowed);
        return lbk_job_fail(c, n->start_mark, "%s must be one of %s; got '%.64s'", key, allowed,
                            lbk_job_yaml_text(n));
    }
    memcpy(lbk_job_key_field(job, d), &it->value, sizeof(int));
    return LBK_OK;
}

static lbk_status set_char(const lbk_job_ctx *c, const lbk_job_key_desc *d, const yaml_node_t *n,
                           const char *key, lbk_job *job)
{
    const char *s = lbk_job_yaml_text(n);
    if (strlen(s) != 1)
        return lbk_job_fail(c, n->start_mark, "%s must be exactly one character, not '%.64s'",
                            key, s);
    if (!lbk_job_delimiter_ok(s[0]))
        return lbk_job_fail(c, n->start_mark,
                            "%s cannot be '%c': it can occur inside numbers or lines", key, s[0]);
    *(char *)lbk_job_key_field(job, d) = s[0];
    return LBK_OK;
}

static scalar_setter scalar_setter_for(lbk_job_key_kind kind)
{
    switch (kind) {
    case LBK_KEY_INT:
    case LBK_KEY_U64: return set_integer;
    case LBK_KEY_DOUBLE: return set_double;
    case LBK_KEY_REAL: return set_real;
    case LBK_KEY_BOOL: return set_bool;
    case LBK_KEY_HEADER: return set_header;
    case LBK_KEY_ENUM: return set_enum;
    case LBK_KEY_CHAR: return set_char;
    default: return NULL;
    }
}

lbk_status lbk_job_apply_value(const lbk_job_ctx *c, const lbk_job_key_desc *d,
                               const yaml_node_t *n, lbk_job *job)
{
    char key[64];
    lbk_job_key_name(d, key, sizeof key);
    if (lbk_job_key_is_path(d))
        return set_path(c, d, n, key, job);
    if (d->kind == LBK_KEY_DEV_LIST)
        return set_dev_list(c, d, n, key, job);
    if (d->kind == LBK_KEY_NAME)
        return set_name(c, d, n, key, job);

    if (n->type != YAML_SCALAR_NODE)
        return lbk_job_fail(c, n->start_mark, "%s must be %s, not %s", key, expected_text(d),
                            lbk_job_yaml_kind(n));
    if (lbk_job_yaml_is_null(n))
        return lbk_job_fail(c, n->start_mark, "%s has no value (expected %s)", key,
                            expected_text(d));
    LBK_TRY(check_no_nul(c, n, key));
    const scalar_setter set = scalar_setter_for(d->kind);
    if (!set)
        return lbk_job_fail(c, n->start_mark, "%s: unhandled key kind (a bug)", key);
    return set(c, d, n, key, job);
}
