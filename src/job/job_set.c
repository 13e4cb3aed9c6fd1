/* --set SECTION.KEY=VALUE: one key of the job from the command line, with
 * the same value rules as the file. The value is YAML (a scalar, or a flow
 * sequence for device.list), except for paths, which are taken literally. */
#include "job_parse.h"

#include "log.h"
#include "try.h"

#include <stdlib.h>

static const yaml_mark_t nowhere = {0, 0, 0};

/* The key named left of the '=' and the value right of it. */
static lbk_status split_assignment(const lbk_job_ctx *c, const char *assignment,
                                   const lbk_job_key_desc **key, const char **value)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return lbk_job_fail(c, nowhere, "expected SECTION.KEY=VALUE, e.g. knn.k=7");
    char name[128];
    const size_t name_len = (size_t)(eq - assignment);
    if (name_len >= sizeof name)
        return lbk_job_fail(c, nowhere, "unknown key '%.64s...'", assignment);
    memcpy(name, assignment, name_len);
    name[name_len] = '\0';
    char *dot = strchr(name, '.');
    if (!dot) {
        const int top = lbk_job_find_key(LBK_SEC_TOP, name);
        if (top < 0)
            return lbk_job_fail(c, nowhere,
                                "expected SECTION.KEY=VALUE, e.g. knn.k=7; got key '%s'", name);
        *key = &lbk_job_keys[top];
        *value = eq + 1;
        return LBK_OK;
    }
    *dot = '\0';
    const lbk_enum_item *sec = lbk_enum_find_name(lbk_job_sections, name);
    const int idx = sec ? lbk_job_find_key(sec->value, dot + 1) : -1;
    *dot = '.';
    if (idx < 0)
        return lbk_job_fail(c, nowhere, "unknown key '%s'", name);
    *key = &lbk_job_keys[idx];
    *value = eq + 1;
    return LBK_OK;
}

/* A scalar node holding text as it is; YAML would read "#" or ": " in a
 * path as syntax, and a shell user does not expect that. */
static yaml_node_t literal_scalar(const char *text, yaml_scalar_style_t style)
{
    yaml_node_t node;
    memset(&node, 0, sizeof node);
    node.type = YAML_SCALAR_NODE;
    node.data.scalar.value = (yaml_char_t *)text;
    node.data.scalar.length = strlen(text);
    node.data.scalar.style = style;
    return node;
}

static lbk_status set_from_yaml(lbk_job_ctx *c, const lbk_job_key_desc *d, const char *value,
                                lbk_job *job)
{
    lbk_status st = LBK_OK;
    yaml_parser_t parser;
    yaml_document_t doc;
    bool doc_ready = false;
    LBK_TRY(lbk_job_check_nesting(c, value, strlen(value)));
    if (!yaml_parser_initialize(&parser))
        return lbk_job_fail(c, nowhere, "cannot initialise the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)value, strlen(value));
    if (!yaml_parser_load(&parser, &doc)) {
        st = lbk_job_yaml_error(c, &parser, NULL, 0);
        goto cleanup;
    }
    doc_ready = true;
    c->doc = &doc;
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    const yaml_node_t empty = literal_scalar("", YAML_PLAIN_SCALAR_STYLE);
    st = lbk_job_apply_value(c, d, root ? root : &empty, job);
    c->doc = NULL;
cleanup:
    if (doc_ready)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return st;
}

static lbk_status job_set(lbk_job *job, const char *assignment, const char *prefix)
{
    lbk_status st = LBK_OK;
    const lbk_job_key_desc *d = NULL;
    const char *value = NULL;
    lbk_job_ctx *c = calloc(1, sizeof *c);
    LBK_FAIL_IF(!c, LBK_ERR_NOMEM, "%s%s: out of memory", prefix, assignment);
    c->origin = assignment;
    c->is_set = true;
    c->set_prefix = prefix;

    LBK_TRY_GOTO(st, split_assignment(c, assignment, &d, &value));
    if (lbk_job_key_is_path(d)) {
        const yaml_node_t node = literal_scalar(value, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
        st = lbk_job_apply_value(c, d, &node, job);
    } else {
        st = set_from_yaml(c, d, value, job);
    }
cleanup:
    free(c);
    return st;
}

lbk_status lbk_job_set(lbk_job *job, const char *assignment)
{
    return job_set(job, assignment, "--set ");
}

lbk_status lbk_job_set_option(lbk_job *job, const char *assignment)
{
    return job_set(job, assignment, "option ");
}
