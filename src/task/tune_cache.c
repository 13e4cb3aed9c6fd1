#include "tune_cache.h"

#include "env_lock.h"
#include "fnv.h"
#include "log.h"
#include "try.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024

/* What identifies the device a file was measured on; a file is used only
 * when all of it matches. */
typedef struct {
    const char *key;
    const char *value;
} identity;

static void device_identity(const lbk_device *dev, identity id[4])
{
    id[0] = (identity){"lbknn_version", LBK_VERSION};
    id[1] = (identity){"device", lbk_device_name(dev)};
    id[2] = (identity){"device_version", lbk_device_version(dev)};
    id[3] = (identity){"driver", lbk_device_driver(dev)};
}

/* The parameters as (key, field) pairs, in file order. */
typedef struct {
    const char *key;
    int *field;
} int_field;

static void tuning_fields(lbk_tuning *t, int_field f[6])
{
    f[0] = (int_field){"lanes", &t->lanes};
    f[1] = (int_field){"block_queries", &t->block_queries};
    f[2] = (int_field){"block_vectors", &t->block_vectors};
    f[3] = (int_field){"tile_blocks", &t->tile_blocks};
    f[4] = (int_field){"slice", &t->slice};
    f[5] = (int_field){"segment_log2", &t->segment_log2};
}

/* FNV-1a over the identity, so that each device, driver and version has
 * its own file. */
static uint64_t identity_hash(const identity id[4])
{
    uint64_t h = LBK_FNV_OFFSET;
    /* Each value with its terminating NUL, so that no two identities run
     * together into the same bytes. */
    for (int i = 0; i < 4; i++)
        h = lbk_fnv_update(h, id[i].value, strlen(id[i].value) + 1);
    return h;
}

bool lbk_tune_cache_dir(char *dir, size_t size)
{
    /* Copied under the environment's lock: getenv's pointers may go stale
     * when another thread sets a variable. */
    lbk_env_lock_acquire();
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n = -1;
    if (xdg && xdg[0] == '/')
        n = snprintf(dir, size, "%s/lbknn", xdg);
    else if (home && home[0])
        n = snprintf(dir, size, "%s/.cache/lbknn", home);
    lbk_env_lock_release();
    if (n < 0 || (size_t)n >= size) {
        dir[0] = '\0';
        return false;
    }
    return true;
}

bool lbk_tune_cache_path(const char *dir, const lbk_device *dev, char *path, size_t size)
{
    identity id[4];
    device_identity(dev, id);
    path[0] = '\0';
    if (!dir || !dir[0])
        return false;
    const int n =
        snprintf(path, size, "%s/tune-%016llx.yaml", dir, (unsigned long long)identity_hash(id));
    if (n < 0 || (size_t)n >= size) {
        path[0] = '\0';
        return false;
    }
    return true;
}

/* A double-quoted YAML scalar: backslash and quote escaped; control bytes
 * (never in a device name) become spaces. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fputc('\\', f);
        fputc(c < 0x20 || c == 0x7f ? ' ' : c, f);
    }
    fputc('"', f);
}

/* The value of a quoted scalar written by put_quoted, in place; NULL when
 * it is not one. */
static char *unquote(char *v)
{
    size_t len = strlen(v);
    if (len < 2 || v[0] != '"' || v[len - 1] != '"')
        return NULL;
    v[len - 1] = '\0';
    char *out = v;
    for (char *p = v + 1; *p; p++) {
        if (*p == '\\') {
            p++;
            if (*p != '"' && *p != '\\')
                return NULL;
        } else if (*p == '"') {
            return NULL;
        }
        *out++ = *p;
    }
    *out = '\0';
    return v;
}

static bool parse_int(const char *v, int *out)
{
    char *end;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 0 || x > 1000000)
        return false;
    *out = (int)x;
    return true;
}

/* What a read has found so far: the identity checked field by field, the
 * parameters, and the first problem. */
typedef struct {
    const identity *id;
    lbk_tuning t;
    unsigned seen; /* one bit per identity key and parameter */
    char why[160];
} cache_read;

/* One "key: value" line. */
static bool read_line(cache_read *r, char *line, unsigned lineno)
{
    char *colon = strstr(line, ": ");
    if (!colon) {
        snprintf(r->why, sizeof r->why, "line %u: expected 'key: value'", lineno);
        return false;
    }
    *colon = '\0';
    char *value = colon + 2;
    int_field f[6];
    tuning_fields(&r->t, f);
    for (int i = 0; i < 4; i++) {
        if (strcmp(line, r->id[i].key) != 0)
            continue;
        const char *v = unquote(value);
        if (!v || strcmp(v, r->id[i].value) != 0) {
            snprintf(r->why, sizeof r->why, "line %u: written for another %s (%.60s)", lineno,
                     r->id[i].key, v ? v : value);
            return false;
        }
        r->seen |= 1u << i;
        return true;
    }
    for (int i = 0; i < 6; i++) {
        if (strcmp(line, f[i].key) != 0)
            continue;
        if (!parse_int(value, f[i].field)) {
            snprintf(r->why, sizeof r->why, "line %u: %s is not a number: '%.40s'", lineno,
                     f[i].key, value);
            return false;
        }
        r->seen |= 1u << (4 + i);
        return true;
    }
    snprintf(r->why, sizeof r->why, "line %u: unknown key '%.40s'", lineno, line);
    return false;
}

static bool read_lines(FILE *f, cache_read *r)
{
    char line[LINE_MAX_BYTES];
    unsigned lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(r->why, sizeof r->why, "line %u is too long", lineno);
            return false;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        if (!read_line(r, line, lineno))
            return false;
    }
    if (ferror(f)) {
        snprintf(r->why, sizeof r->why, "read error");
        return false;
    }
    if (r->seen != (1u << 10) - 1) {
        snprintf(r->why, sizeof r->why, "incomplete (a key is missing)");
        return false;
    }
    return lbk_tuning_valid(&r->t, r->why, sizeof r->why);
}

lbk_tune_cache_result lbk_tune_cache_read(const char *path, const lbk_device *dev,
                                          lbk_tuning *out)
{
    identity id[4];
    device_identity(dev, id);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return LBK_TUNE_CACHE_MISSING;
        lbk_warn("ignoring the tuning cache %s: %s; using derived kernel parameters", path,
                 strerror(errno));
        return LBK_TUNE_CACHE_IGNORED;
    }
    cache_read r = {.id = id};
    const bool ok = read_lines(f, &r);
    fclose(f);
    if (!ok) {
        lbk_warn("ignoring the tuning cache %s: %s; using derived kernel parameters (run "
                 "'lbknn tune' to measure them again)",
                 path, r.why);
        return LBK_TUNE_CACHE_IGNORED;
    }
    *out = r.t;
    out->source = LBK_TUNING_CACHE;
    return LBK_TUNE_CACHE_USED;
}

/* mkdir -p of the directory part of `path`. */
static lbk_status make_parents(const char *path)
{
    char dir[4096];
    LBK_FAIL_IF(strlen(path) >= sizeof dir, LBK_ERR_IO, "%s: path too long", path);
    strcpy(dir, path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        LBK_FAIL_IF(mkdir(dir, 0755) != 0 && errno != EEXIST, LBK_ERR_IO,
                    "cannot create directory %s: %s", dir, strerror(errno));
        *p = '/';
    }
    return LBK_OK;
}

static void write_body(FILE *f, const identity id[4], lbk_tuning t, const char *comment)
{
    fprintf(f, "# lbknn tuning cache, written by 'lbknn tune': the kernel parameters measured\n"
               "# fastest on this device. Results do not depend on them; delete this file to\n"
               "# go back to the parameters derived from the device.\n");
    for (const char *c = comment; c && *c;) {
        const char *nl = strchr(c, '\n');
        const int len = nl ? (int)(nl - c) : (int)strlen(c);
        fprintf(f, "# %.*s\n", len, c);
        c += len + (nl ? 1 : 0);
    }
    for (int i = 0; i < 4; i++) {
        fprintf(f, "%s: ", id[i].key);
        put_quoted(f, id[i].value);
        fputc('\n', f);
    }
    int_field fields[6];
    tuning_fields(&t, fields);
    for (int i = 0; i < 6; i++)
        fprintf(f, "%s: %d\n", fields[i].key, *fields[i].field);
}

lbk_status lbk_tune_cache_write(const char *path, const lbk_device *dev, const lbk_tuning *t,
                                const char *comment)
{
    identity id[4];
    device_identity(dev, id);
    LBK_TRY(make_parents(path));
    /* Written beside the file and renamed over it: a run reading the cache
     * at the same time sees the old file or the new one, never half. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    LBK_FAIL_IF(!f, LBK_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    write_body(f, id, *t, comment);
    const bool written = !ferror(f);
    if (fclose(f) != 0 || !written || rename(tmp, path) != 0) {
        lbk_error("cannot write the tuning cache %s: %s", path, strerror(errno));
        remove(tmp);
        return LBK_ERR_IO;
    }
    return LBK_OK;
}
