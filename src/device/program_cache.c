#include "program_cache.h"

#include "fnv.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "lbknn program 1\n"
#define MAX_BINARY ((uint64_t)256 << 20)

/* What a file must have been built for: one line naming the device,
 * driver, lbknn version and options. */
static void identity(const lbk_device *dev, const char *options, char *buf, size_t size)
{
    snprintf(buf, size, "%s|%s|%s|%s|%s\n", lbk_device_name(dev), lbk_device_version(dev),
             lbk_device_driver(dev), LBK_VERSION, options);
    for (char *p = buf; *p && p[1]; p++)
        if (*p == '\n')
            *p = ' ';
}

static bool file_path(const char *dir, const char *id, const char *text, char *path, size_t size)
{
    if (!dir || !dir[0])
        return false;
    uint64_t h = lbk_fnv_update(LBK_FNV_OFFSET, id, strlen(id));
    h = lbk_fnv_update(h, text, strlen(text));
    const int n = snprintf(path, size, "%s/program-%016llx.bin", dir, (unsigned long long)h);
    return n > 0 && (size_t)n < size;
}

/* The whole file, or NULL. */
static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long end = ftell(f);
        if (end > 0 && (uint64_t)end <= MAX_BINARY + 4096 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)end);
            if (buf && fread(buf, 1, (size_t)end, f) != (size_t)end) {
                free(buf);
                buf = NULL;
            }
            *len = (size_t)end;
        }
    }
    fclose(f);
    return buf;
}

/* The binary inside a file's bytes when its header holds: magic, identity,
 * size and checksum. */
static const unsigned char *check_file(const unsigned char *buf, size_t len, const char *id,
                                       size_t *bin_len)
{
    const size_t head = strlen(MAGIC) + strlen(id);
    if (len < head + 16 || memcmp(buf, MAGIC, strlen(MAGIC)) != 0 ||
        memcmp(buf + strlen(MAGIC), id, strlen(id)) != 0)
        return NULL;
    uint64_t size, sum;
    memcpy(&size, buf + head, 8);
    memcpy(&sum, buf + head + 8, 8);
    if (size == 0 || size != len - head - 16 ||
        lbk_fnv_update(LBK_FNV_OFFSET, buf + head + 16, (size_t)size) != sum)
        return NULL;
    *bin_len = (size_t)size;
    return buf + head + 16;
}

static bool build_binary(const lbk_device *dev, const unsigned char *bin, size_t len,
                         const char *options, cl_program *out)
{
    cl_device_id id = lbk_device_id(dev);
    cl_int status = CL_SUCCESS, err;
    cl_program p =
        clCreateProgramWithBinary(lbk_device_context(dev), 1, &id, &len, &bin, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS)
        return false;
    if (clBuildProgram(p, 1, &id, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(p);
        return false;
    }
    *out = p;
    return true;
}

bool lbk_program_cache_load(const lbk_device *dev, const char *dir, const char *text,
                            const char *options, cl_program *out)
{
    char id[1024], path[4096];
    identity(dev, options, id, sizeof id);
    if (!file_path(dir, id, text, path, sizeof path))
        return false;
    size_t len = 0, bin_len = 0;
    unsigned char *buf = read_all(path, &len);
    if (!buf)
        return false;
    const unsigned char *bin = check_file(buf, len, id, &bin_len);
    const bool ok = bin && build_binary(dev, bin, bin_len, options, out);
    free(buf);
    return ok;
}

/* The program's binary for the device (malloc'd), or NULL. */
static unsigned char *program_binary(cl_program program, size_t *len)
{
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0 || size > MAX_BINARY)
        return NULL;
    unsigned char *bin = malloc(size);
    if (bin &&
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(bin);
        return NULL;
    }
    *len = size;
    return bin;
}

static bool write_file(const char *path, const char *id, const unsigned char *bin, size_t len)
{
    /* A name of this process and call: two contexts in two threads may
     * store the same program at once, and must not write one file. */
    static atomic_uint serial;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(),
             atomic_fetch_add(&serial, 1));
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return false;
    const uint64_t size = len, sum = lbk_fnv_update(LBK_FNV_OFFSET, bin, len);
    bool ok = fputs(MAGIC, f) >= 0 && fputs(id, f) >= 0 && fwrite(&size, 8, 1, f) == 1 &&
              fwrite(&sum, 8, 1, f) == 1 && fwrite(bin, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    /* Renamed into place: a process reading it sees a whole file or none. */
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return false;
    }
    return true;
}

void lbk_program_cache_store(const lbk_device *dev, const char *dir, const char *text,
                             const char *options, cl_program program)
{
    char id[1024], path[4096];
    identity(dev, options, id, sizeof id);
    if (!file_path(dir, id, text, path, sizeof path))
        return;
    size_t len = 0;
    unsigned char *bin = program_binary(program, &len);
    if (!bin)
        return;
    /* The directory may not exist yet: its parent is the user's cache. */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    for (char *p = parent + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(parent, 0755);
        *p = '/';
    }
    mkdir(parent, 0755);
    write_file(path, id, bin, len);
    free(bin);
}
