/* Limits that keep parsing a job linear in its size: libyaml's scanner
 * checks every open flow level at every token, so deep nesting costs the
 * square of the depth (200 KB of brackets took 50 s). The nesting is
 * measured on libyaml's event stream, which stops long before that cost:
 * the scanner looks ahead at most one simple key (1024 characters). */
#include "job_parse.h"

#include "log.h"
#include "try.h"

#include <errno.h>
#include <stdlib.h>

lbk_status lbk_job_check_nesting(const lbk_job_ctx *c, const char *text, size_t len)
{
    lbk_status st = LBK_OK;
    yaml_parser_t parser;
    int depth = 0;
    LBK_FAIL_IF(!yaml_parser_initialize(&parser), LBK_ERR_NOMEM,
                "%s: cannot initialise the YAML parser", c->origin);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (bool done = false; !done && st == LBK_OK;) {
        yaml_event_t event;
        /* A syntax error is the loader's to report, with its position. */
        if (!yaml_parser_parse(&parser, &event))
            break;
        const yaml_mark_t mark = event.start_mark;
        switch (event.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > LBK_JOB_MAX_DEPTH)
                st = lbk_job_fail(c, mark, "nested more than %d levels deep (a job needs 3)",
                                  LBK_JOB_MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_STREAM_END_EVENT: done = true; break;
        default: break;
        }
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    return st;
}

lbk_status lbk_job_read_text(const lbk_job_ctx *c, FILE *f, char **text, size_t *len)
{
    /* One byte more than the limit tells a file at the limit from a larger
     * one, also for a pipe, whose size is known only once it is read. */
    char *buf = malloc(LBK_JOB_MAX_BYTES + 1);
    *text = NULL;
    *len = 0;
    LBK_FAIL_IF(!buf, LBK_ERR_NOMEM, "%s: out of memory reading the job file", c->origin);
    const size_t n = fread(buf, 1, LBK_JOB_MAX_BYTES + 1, f);
    if (ferror(f)) {
        lbk_error("%s: cannot read: %s", c->origin, strerror(errno ? errno : EIO));
        free(buf);
        return LBK_ERR_IO;
    }
    if (n > LBK_JOB_MAX_BYTES) {
        free(buf);
        lbk_error("%s: larger than %d KiB; a job file is a few lines of YAML", c->origin,
                  LBK_JOB_MAX_BYTES / 1024);
        return LBK_ERR_CONFIG;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return LBK_OK;
}
