/* Loading a job file: libyaml's document API, then a walk of the document
 * against the schema. Each section and key records where it stood, so that
 * the cross-key rules can point at the line that broke them. */
#include "job_parse.h"

#include "file_read.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>

static lbk_status apply_section(lbk_job_ctx *c, int section, const yaml_node_t *map, lbk_job *job)
{
    const char *name = lbk_job_sections[section].name;
    if (lbk_job_yaml_is_null(map))
        return LBK_OK;
    if (map->type != YAML_MAPPING_NODE)
        return lbk_job_fail(c, map->start_mark, "section '%s' must be a mapping, not %s", name,
                            lbk_job_yaml_kind(map));
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return lbk_job_fail(c, k->start_mark, "keys in section '%s' must be names, not %s",
                                name, lbk_job_yaml_kind(k));
        const int idx = lbk_job_find_key(section, lbk_job_yaml_text(k));
        if (idx < 0) {
            char allowed[256];
            lbk_job_join_keys(section, allowed, sizeof allowed);
            return lbk_job_fail(c, k->start_mark,
                                "unknown key '%.64s' in section '%s' (keys: %s)",
                                lbk_job_yaml_text(k), name, allowed);
        }
        if (c->key_seen[idx])
            return lbk_job_fail(c, k->start_mark, "duplicate key '%s.%s'", name,
                                lbk_job_keys[idx].name);
        c->key_seen[idx] = true;
        c->key_mark[idx] = v->start_mark;
        LBK_TRY(lbk_job_apply_value(c, &lbk_job_keys[idx], v, job));
    }
    return LBK_OK;
}

/* A top-level key (task): a scalar value beside the sections. */
static lbk_status apply_top_key(lbk_job_ctx *c, int idx, const yaml_node_t *k,
                                const yaml_node_t *v, lbk_job *job)
{
    if (c->key_seen[idx])
        return lbk_job_fail(c, k->start_mark, "duplicate key '%s'", lbk_job_keys[idx].name);
    c->key_seen[idx] = true;
    c->key_mark[idx] = v->start_mark;
    return lbk_job_apply_value(c, &lbk_job_keys[idx], v, job);
}

static lbk_status apply_root(lbk_job_ctx *c, const yaml_node_t *root, lbk_job *job)
{
    char sections[128], top_keys[64];
    lbk_enum_join_names(lbk_job_sections, sections, sizeof sections);
    lbk_job_join_keys(LBK_SEC_TOP, top_keys, sizeof top_keys);
    c->root_mark = root->start_mark;
    if (lbk_job_yaml_is_null(root))
        return LBK_OK;
    if (root->type != YAML_MAPPING_NODE)
        return lbk_job_fail(c, root->start_mark,
                            "a job must be a mapping of sections (%s), not %s", sections,
                            lbk_job_yaml_kind(root));
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return lbk_job_fail(c, k->start_mark, "section names must be names, not %s",
                                lbk_job_yaml_kind(k));
        const int top = lbk_job_find_key(LBK_SEC_TOP, lbk_job_yaml_text(k));
        if (top >= 0) {
            LBK_TRY(apply_top_key(c, top, k, v, job));
            continue;
        }
        const lbk_enum_item *sec = lbk_enum_find_name(lbk_job_sections, lbk_job_yaml_text(k));
        if (!sec)
            return lbk_job_fail(c, k->start_mark, "unknown key '%.64s' (keys: %s; sections: %s)",
                                lbk_job_yaml_text(k), top_keys, sections);
        if (c->section_seen[sec->value])
            return lbk_job_fail(c, k->start_mark, "duplicate key '%s'", sec->name);
        c->section_seen[sec->value] = true;
        c->section_mark[sec->value] = lbk_job_yaml_is_null(v) ? k->start_mark : v->start_mark;
        LBK_TRY(apply_section(c, sec->value, v, job));
    }
    return LBK_OK;
}

/* The first document onto the job. An empty file (or comments only) has no
 * document: all defaults. */
static lbk_status load_document(lbk_job_ctx *c, yaml_parser_t *parser, const char *text,
                                size_t len, lbk_job *job)
{
    yaml_document_t doc;
    if (!yaml_parser_load(parser, &doc))
        return lbk_job_yaml_error(c, parser, text, len);
    c->doc = &doc;
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    const lbk_status st = root ? apply_root(c, root, job) : LBK_OK;
    c->doc = NULL;
    yaml_document_delete(&doc);
    return st;
}

/* A second document would otherwise be ignored without a word. */
static lbk_status expect_no_second_document(const lbk_job_ctx *c, yaml_parser_t *parser,
                                            const char *text, size_t len)
{
    yaml_document_t extra;
    if (!yaml_parser_load(parser, &extra))
        return lbk_job_yaml_error(c, parser, text, len);
    const bool found = yaml_document_get_root_node(&extra) != NULL;
    const yaml_mark_t mark = extra.start_mark;
    yaml_document_delete(&extra);
    if (found)
        return lbk_job_fail(c, mark, "a job file holds one YAML document; found a second");
    return LBK_OK;
}

/* The file is read whole first (within LBK_JOB_MAX_BYTES), so that its
 * nesting is checked before libyaml builds the document, also when it comes
 * from a pipe. */
static lbk_status parse_file(lbk_job_ctx *c, FILE *f, lbk_job *job)
{
    lbk_status st = LBK_OK;
    char *text = NULL;
    size_t len = 0;
    yaml_parser_t parser;
    LBK_TRY(lbk_job_read_text(c, f, &text, &len));
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        lbk_error("%s: cannot initialise the YAML parser", c->origin);
        return LBK_ERR_NOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    LBK_TRY_GOTO(st, lbk_job_check_nesting(c, text, len));
    LBK_TRY_GOTO(st, load_document(c, &parser, text, len, job));
    LBK_TRY_GOTO(st, expect_no_second_document(c, &parser, text, len));
    st = lbk_job_cross_check(c, job);
cleanup:
    yaml_parser_delete(&parser);
    free(text);
    return st;
}

lbk_status lbk_job_load(const char *path, lbk_job *job)
{
    lbk_status st = LBK_OK;
    FILE *f = NULL;
    lbk_job_defaults(job);
    LBK_FAIL_IF(strlen(path) >= sizeof job->source, LBK_ERR_CONFIG,
                "job file path is too long (at most %d bytes): %.64s...", LBK_PATH_MAX - 1, path);
    snprintf(job->source, sizeof job->source, "%s", path);
    lbk_job_ctx *c = calloc(1, sizeof *c);
    LBK_FAIL_IF(!c, LBK_ERR_NOMEM, "out of memory loading %s", path);
    c->origin = path;
    c->has_marks = true;
    lbk_job_dir(path, c->base_dir, sizeof c->base_dir);

    LBK_TRY_GOTO(st, lbk_file_read_open(path, "job file", LBK_ERR_CONFIG, &f));
    st = parse_file(c, f, job);
cleanup:
    if (f)
        fclose(f);
    free(c);
    return st;
}
