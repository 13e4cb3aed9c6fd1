/* Where a job error points, and how it reads: every error is logged once,
 * as "FILE:LINE:COL: what" (a file), "--set ASSIGN: what" (an override) or
 * "SOURCE: what" (validation of a job already built). */
#include "job_parse.h"

#include "log.h"

#include <stdarg.h>
#include <string.h>

lbk_status lbk_job_fail(const lbk_job_ctx *c, yaml_mark_t mark, const char *fmt, ...)
{
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* A --set value may be a whole page; the message stays one line that
     * still shows what is wrong. */
    if (c->is_set)
        lbk_error("%s%.160s%s: %s", c->set_prefix, c->origin,
                  strlen(c->origin) > 160 ? "..." : "", what);
    else if (c->has_marks)
        lbk_error("%s:%zu:%zu: %s", c->origin, mark.line + 1, mark.column + 1, what);
    else
        lbk_error("%s: %s", c->origin, what);
    return LBK_ERR_CONFIG;
}

yaml_mark_t lbk_job_section_mark(const lbk_job_ctx *c, int section)
{
    if (section == LBK_SEC_TOP)
        return c->root_mark;
    return c->section_seen[section] ? c->section_mark[section] : c->root_mark;
}

bool lbk_job_key_seen(const lbk_job_ctx *c, const lbk_job *job, const void *field)
{
    const int idx = lbk_job_key_at(job, field);
    return idx >= 0 && c->key_seen[idx];
}

yaml_mark_t lbk_job_mark_of(const lbk_job_ctx *c, const lbk_job *job, const void *field)
{
    const int idx = lbk_job_key_at(job, field);
    if (idx < 0)
        return c->root_mark;
    if (c->key_seen[idx])
        return c->key_mark[idx];
    return lbk_job_section_mark(c, lbk_job_keys[idx].section);
}

/* libyaml's reader errors (bad encoding) carry only a byte offset; turn it
 * into a line and column like every other error. text may be NULL (--set). */
static yaml_mark_t mark_at_offset(const char *text, size_t len, size_t offset)
{
    yaml_mark_t m = {0, 0, 0};
    for (size_t i = 0; text && i < offset && i < len; i++) {
        if (text[i] == '\n') {
            m.line++;
            m.column = 0;
        } else {
            m.column++;
        }
    }
    return m;
}

lbk_status lbk_job_yaml_error(const lbk_job_ctx *c, const yaml_parser_t *parser, const char *text,
                              size_t len)
{
    if (parser->error == YAML_MEMORY_ERROR) {
        lbk_error("%s: out of memory while parsing", c->origin);
        return LBK_ERR_NOMEM;
    }
    const char *problem = parser->problem ? parser->problem : "unknown error";
    if (parser->error == YAML_READER_ERROR)
        return lbk_job_fail(c, mark_at_offset(text, len, parser->problem_offset),
                            "invalid YAML: %s", problem);
    if (parser->context)
        return lbk_job_fail(c, parser->problem_mark, "invalid YAML: %s %s (line %zu)", problem,
                            parser->context, parser->context_mark.line + 1);
    return lbk_job_fail(c, parser->problem_mark, "invalid YAML: %s", problem);
}
