/* `lbknn keys`: every key of the schema with what it takes, one a line, for
 * the reader and for the build, which makes the bash completion of --set
 * (and the man page's JOB KEYS) from this output, so that neither lists a
 * key or a value by hand; and a list of keys as a message names it. */
#include "job_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* One word: the enumerated values joined by '|', or what kind of value. */
static void print_values(FILE *f, const lbk_job_key_desc *d)
{
    switch (d->kind) {
    case LBK_KEY_ENUM:
        for (const lbk_enum_item *it = d->items; it->name; it++)
            fprintf(f, "%s%s", it == d->items ? "" : "|", it->name);
        break;
    case LBK_KEY_BOOL: fputs("true|false", f); break;
    case LBK_KEY_HEADER: fputs("auto|true|false", f); break;
    case LBK_KEY_INT: fprintf(f, "%" PRId64 "..%" PRId64, d->min, d->max); break;
    case LBK_KEY_U64:
        /* INT64_MAX: no bound a reader needs to know. */
        if (d->max == INT64_MAX)
            fprintf(f, "%" PRId64 "..", d->min);
        else
            fprintf(f, "%" PRId64 "..%" PRId64, d->min, d->max);
        break;
    case LBK_KEY_DOUBLE: fputs("NUMBER>0", f); break;
    case LBK_KEY_REAL: fputs("NUMBER", f); break;
    case LBK_KEY_CHAR: fputs("CHAR", f); break;
    case LBK_KEY_IN_PATH:
    case LBK_KEY_OUT_PATH: fputs("PATH", f); break;
    case LBK_KEY_NAME: fputs("NAME", f); break;
    case LBK_KEY_DEV_LIST: fputs("[N,...]", f); break;
    }
}

void lbk_job_print_keys(FILE *f)
{
    for (int i = 0; i < lbk_job_key_count; i++) {
        char name[96];
        lbk_job_key_name(&lbk_job_keys[i], name, sizeof name);
        fprintf(f, "%-26s ", name);
        print_values(f, &lbk_job_keys[i]);
        fputc('\n', f);
    }
}

/* Whether `name` is among `names`. */
static bool listed(const char *const *names, const char *name)
{
    for (const char *const *n = names; *n; n++)
        if (strcmp(*n, name) == 0)
            return true;
    return false;
}

/* The index of the key "section.key" (or a top-level key), or -1. */
static int key_named(const char *name)
{
    for (int i = 0; i < lbk_job_key_count; i++) {
        char full[96];
        lbk_job_key_name(&lbk_job_keys[i], full, sizeof full);
        if (strcmp(full, name) == 0)
            return i;
    }
    return -1;
}

/* Whether every key of `section` is among `names`. */
static bool whole_section(const char *const *names, int section)
{
    for (int i = 0; i < lbk_job_key_count; i++) {
        char name[96];
        lbk_job_key_name(&lbk_job_keys[i], name, sizeof name);
        if (lbk_job_keys[i].section == section && !listed(names, name))
            return false;
    }
    return true;
}

void lbk_job_join_names(const char *const *names, char *buf, size_t size)
{
    bool shown[LBK_SEC_COUNT] = {false};
    size_t used = 0;
    buf[0] = '\0';
    for (const char *const *n = names; *n && used < size; n++) {
        const int at = key_named(*n);
        const int section = at < 0 ? LBK_SEC_TOP : lbk_job_keys[at].section;
        char item[96];
        snprintf(item, sizeof item, "%s", *n);
        if (section != LBK_SEC_TOP && whole_section(names, section)) {
            if (shown[section])
                continue;
            shown[section] = true;
            snprintf(item, sizeof item, "%s.*", lbk_job_sections[section].name);
        }
        const int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", item);
        used = w < 0 ? size : used + (size_t)w;
    }
}
