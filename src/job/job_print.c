/* Printing: the job back as YAML (every key, in schema order) and the
 * double-quoted scalar that spells any path so that YAML readers accept it. */
#include "job_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
void lbk_job_print_string(FILE *f, const char *s)
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
            fprintf(f, "\\u%04" PRIX32, cp); /* all non-printables are in the BMP */
            p += len;
        }
    }
    fputc('"', f);
}

static void print_value(FILE *f, const lbk_job *job, const lbk_job_key_desc *d)
{
    const void *p = lbk_job_key_cfield(job, d);
    switch (d->kind) {
    case LBK_KEY_INT: fprintf(f, "%d", *(const int *)p); break;
    case LBK_KEY_U64: fprintf(f, "%" PRIu64, *(const uint64_t *)p); break;
    case LBK_KEY_DOUBLE: fprintf(f, "%.17g", *(const double *)p); break;
    case LBK_KEY_REAL: {
        const double v = *(const double *)p;
        if (v == v)
            fprintf(f, "%.17g", v);
        else
            fputs("none", f); /* NaN: none given */
        break;
    }
    case LBK_KEY_BOOL: fputs(*(const bool *)p ? "true" : "false", f); break;
    case LBK_KEY_HEADER: {
        int h = *(const int *)p;
        fputs(h < 0 ? "auto" : h ? "true" : "false", f);
        break;
    }
    case LBK_KEY_ENUM: {
        int v;
        memcpy(&v, p, sizeof v);
        const lbk_enum_item *it = lbk_enum_find_value(d->items, v);
        fputs(it ? it->name : "\"?\"", f); /* quoted: the print stays YAML */
        break;
    }
    case LBK_KEY_CHAR: {
        char s[2] = {*(const char *)p, '\0'};
        lbk_job_print_string(f, s);
        break;
    }
    case LBK_KEY_IN_PATH:
    case LBK_KEY_OUT_PATH:
    case LBK_KEY_NAME: lbk_job_print_string(f, (const char *)p); break;
    case LBK_KEY_DEV_LIST:
        fputc('[', f);
        for (int j = 0; j < job->device.list_len && j < LBK_JOB_MAX_DEVICE_LIST; j++)
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
    int section = LBK_SEC_TOP; /* the top-level keys come first, under no header */
    for (int i = 0; i < lbk_job_key_count; i++) {
        const lbk_job_key_desc *d = &lbk_job_keys[i];
        if (d->section != section) {
            section = d->section;
            fprintf(f, "%*s%s:\n", indent, "", lbk_job_sections[section].name);
        }
        fprintf(f, "%*s%s%s: ", indent, "", d->section == LBK_SEC_TOP ? "" : "  ", d->name);
        print_value(f, job, d);
        fputc('\n', f);
    }
}
