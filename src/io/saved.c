#include "saved.h"

#include "log.h"
#include "try.h"

#include <errno.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files are written and read in pieces of this size, the CRC computed as
 * they go (libdeflate's CRC32 is zlib's, several times faster). */
#define CHUNK ((size_t)64 << 20)

static void join(char *out, size_t size, const char *dir, const char *name)
{
    snprintf(out, size, "%s/%s", dir, name);
}

uint32_t lbk_saved_crc32(uint32_t crc, const void *data, size_t len)
{
    return libdeflate_crc32(crc, data, len);
}

lbk_status lbk_saved_write(const char *dir, const char *name, const void *data, uint64_t bytes,
                           char *lines, size_t size, size_t *used)
{
    char path[4096];
    join(path, sizeof path, dir, name);
    FILE *f = fopen(path, "wb");
    LBK_FAIL_IF(!f, LBK_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    const unsigned char *p = data;
    uint32_t crc = 0;
    bool ok = true;
    for (uint64_t at = 0; at < bytes && ok; at += CHUNK) {
        const size_t n = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
        crc = libdeflate_crc32(crc, p + at, n);
        ok = fwrite(p + at, 1, n, f) == n;
    }
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    LBK_FAIL_IF(!ok, LBK_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    const int w = snprintf(lines + *used, size - *used, "file.%s = %" PRIu64 " %08" PRIx32 "\n",
                           name, bytes, crc);
    LBK_FAIL_IF(w < 0 || (size_t)w >= size - *used, LBK_ERR_INTERNAL,
                "internal: manifest lines of %s overflow", name);
    *used += (size_t)w;
    return LBK_OK;
}

/* The manifest's size and CRC of NAME. */
static lbk_status recorded(const char *dir, const char *name, const char *manifest,
                           uint64_t *bytes, uint32_t *crc)
{
    char key[256], value[64];
    snprintf(key, sizeof key, "file.%s", name);
    unsigned long long b = 0;
    unsigned c = 0;
    const bool found = lbk_saved_get(manifest, key, value, sizeof value);
    LBK_FAIL_IF(!found || sscanf(value, "%llu %x", &b, &c) != 2, LBK_ERR_INPUT,
                "%s/%s: saved index: %s has no valid line %s for it", dir, name,
                LBK_SAVED_MANIFEST, key);
    *bytes = b;
    *crc = c;
    return LBK_OK;
}

static lbk_status read_checked(FILE *f, const char *path, unsigned char *p, uint64_t bytes,
                               uint32_t want)
{
    uint32_t crc = 0;
    for (uint64_t at = 0; at < bytes; at += CHUNK) {
        const size_t n = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
        LBK_FAIL_IF(fread(p + at, 1, n, f) != n, LBK_ERR_IO, "%s: saved index: read failed",
                    path);
        crc = libdeflate_crc32(crc, p + at, n);
    }
    LBK_FAIL_IF(crc != want, LBK_ERR_INPUT,
                "%s: saved index: corrupted (CRC32 %08" PRIx32 ", the manifest says %08" PRIx32
                ")",
                path, crc, want);
    return LBK_OK;
}

/* DIR/NAME opened for reading after its manifest line, its size and its
 * presence are checked; *crc is the manifest's. */
static lbk_status open_checked(const char *dir, const char *name, const char *manifest,
                               uint64_t bytes, char *path, size_t size, uint32_t *crc, FILE **f)
{
    join(path, size, dir, name);
    uint64_t want_bytes = 0;
    LBK_TRY(recorded(dir, name, manifest, &want_bytes, crc));
    LBK_FAIL_IF(want_bytes != bytes, LBK_ERR_INPUT,
                "%s: saved index: the manifest records %" PRIu64 " bytes where %" PRIu64
                " are expected",
                path, want_bytes, bytes);
    struct stat sb;
    LBK_FAIL_IF(stat(path, &sb) != 0, LBK_ERR_INPUT, "%s: saved index: file missing: %s", path,
                strerror(errno));
    LBK_FAIL_IF((uint64_t)sb.st_size != bytes, LBK_ERR_INPUT,
                "%s: saved index: %lld bytes, the manifest says %" PRIu64, path,
                (long long)sb.st_size, bytes);
    *f = fopen(path, "rb");
    LBK_FAIL_IF(!*f, LBK_ERR_IO, "%s: saved index: cannot open: %s", path, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_saved_read(const char *dir, const char *name, const char *manifest, void *data,
                          uint64_t bytes)
{
    char path[4096];
    uint32_t want_crc = 0;
    FILE *f = NULL;
    LBK_TRY(open_checked(dir, name, manifest, bytes, path, sizeof path, &want_crc, &f));
    const lbk_status st = read_checked(f, path, data, bytes, want_crc);
    fclose(f);
    return st;
}

/* The pieces of lbk_saved_read_pieces: small enough to stay in cache
 * between the read and the copy. */
#define PIECE ((size_t)4 << 20)

lbk_status lbk_saved_read_pieces(const char *dir, const char *name, const char *manifest,
                                 uint64_t bytes, lbk_saved_take take, void *user)
{
    char path[4096];
    uint32_t want_crc = 0;
    FILE *f = NULL;
    LBK_TRY(open_checked(dir, name, manifest, bytes, path, sizeof path, &want_crc, &f));
    const size_t size = bytes < PIECE ? (size_t)bytes + 1 : PIECE;
    unsigned char *piece = malloc(size);
    lbk_status st = LBK_OK;
    if (!piece) {
        lbk_error("%s: out of host memory for reading it", path);
        st = LBK_ERR_NOMEM;
    }
    uint32_t crc = 0;
    for (uint64_t at = 0; st == LBK_OK && at < bytes; at += PIECE) {
        const size_t n = bytes - at < PIECE ? (size_t)(bytes - at) : PIECE;
        if (fread(piece, 1, n, f) != n) {
            lbk_error("%s: saved index: read failed", path);
            st = LBK_ERR_IO;
            break;
        }
        crc = libdeflate_crc32(crc, piece, n);
        take(user, piece, at, n);
    }
    if (st == LBK_OK && crc != want_crc) {
        lbk_error("%s: saved index: corrupted (CRC32 %08" PRIx32 ", the manifest says %08" PRIx32
                  ")",
                  path, crc, want_crc);
        st = LBK_ERR_INPUT;
    }
    free(piece);
    fclose(f);
    return st;
}

lbk_status lbk_saved_manifest_write(const char *dir, const char *text, size_t len)
{
    char path[4096], tmp[4096];
    join(path, sizeof path, dir, LBK_SAVED_MANIFEST);
    join(tmp, sizeof tmp, dir, LBK_SAVED_MANIFEST ".partial");
    FILE *f = fopen(tmp, "wb");
    LBK_FAIL_IF(!f, LBK_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    bool ok = fwrite(text, 1, len, f) == len;
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return LBK_OK;
    lbk_error("%s: write failed: %s", path, strerror(errno));
    remove(tmp);
    return LBK_ERR_IO;
}

lbk_status lbk_saved_manifest_read(const char *dir, char **text)
{
    char path[4096];
    join(path, sizeof path, dir, LBK_SAVED_MANIFEST);
    *text = NULL;
    FILE *f = fopen(path, "rb");
    LBK_FAIL_IF(!f, LBK_ERR_INPUT, "%s: saved index: cannot open its manifest: %s", path,
                strerror(errno));
    lbk_status st = LBK_OK;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    char *buf = len >= 0 && len < (1L << 24) ? malloc((size_t)len + 1) : NULL;
    if (!buf || fseek(f, 0, SEEK_SET) != 0 || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        lbk_error("%s: saved index: cannot read its manifest", path);
        free(buf);
        st = LBK_ERR_INPUT;
    } else {
        buf[len] = '\0';
        *text = buf;
    }
    fclose(f);
    return st;
}

bool lbk_saved_get(const char *manifest, const char *key, char *value, size_t size)
{
    const size_t klen = strlen(key);
    for (const char *line = manifest; line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > klen + 3 && strncmp(line, key, klen) == 0 &&
            strncmp(line + klen, " = ", 3) == 0) {
            const size_t vlen = len - klen - 3;
            if (vlen >= size)
                return false;
            memcpy(value, line + klen + 3, vlen);
            value[vlen] = '\0';
            return true;
        }
        line = end ? end + 1 : NULL;
    }
    return false;
}

bool lbk_saved_get_u64(const char *manifest, const char *key, uint64_t *value)
{
    char text[32], *end = NULL;
    if (!lbk_saved_get(manifest, key, text, sizeof text) || text[0] < '0' || text[0] > '9')
        return false;
    errno = 0;
    const unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        return false;
    *value = v;
    return true;
}

lbk_status lbk_saved_make_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        LBK_FAIL_IF(!S_ISDIR(sb.st_mode), LBK_ERR_CONFIG,
                    "index.path: %s exists and is not a directory", dir);
        return LBK_OK;
    }
    LBK_FAIL_IF(mkdir(dir, 0777) != 0, LBK_ERR_IO, "index.path: cannot create %s: %s", dir,
                strerror(errno));
    return LBK_OK;
}
