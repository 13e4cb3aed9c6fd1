/* LD_PRELOAD shim for the shell tests: failures a full disk or a broken
 * file system would cause, without privileges.
 * - With LBK_FAIL_PWRITE_DIR=DIR, every pwrite to a file in a directory
 *   whose path ends in DIR fails with ENOSPC (an output being written, named
 *   or not yet: /proc/self/fd shows "DIR/#inode (deleted)" for those).
 * - With LBK_FAIL_RENAME_TO=SUFFIX, every rename whose destination ends in
 *   SUFFIX fails with EIO (a commit that fails half way).
 * - With LBK_FAIL_REALLOC_ABOVE=BYTES, every realloc to more than BYTES
 *   fails with ENOMEM (getline growing its buffer for a long line). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef int (*rename_fn)(const char *, const char *);
typedef void *(*realloc_fn)(void *, size_t);

static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), tl = strlen(tail);
    return n >= tl && strcmp(s + n - tl, tail) == 0;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset)
{
    static pwrite_fn real;
    if (!real) {
        /* memcpy: ISO C has no cast from an object to a function pointer. */
        void *sym = next_symbol("pwrite");
        memcpy(&real, &sym, sizeof real);
    }
    const char *dir = getenv("LBK_FAIL_PWRITE_DIR");
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t len = dir && *dir ? readlink(link, target, sizeof target - 1) : -1;
    if (len > 0) {
        target[len] = '\0';
        char *slash = strrchr(target, '/');
        if (slash) {
            *slash = '\0';
            if (ends_with(target, dir)) {
                errno = ENOSPC;
                return -1;
            }
        }
    }
    return real(fd, buf, n, offset);
}

int rename(const char *from, const char *to)
{
    static rename_fn real;
    if (!real) {
        void *sym = next_symbol("rename");
        memcpy(&real, &sym, sizeof real);
    }
    const char *tail = getenv("LBK_FAIL_RENAME_TO");
    if (tail && *tail && ends_with(to, tail)) {
        errno = EIO;
        return -1;
    }
    return real(from, to);
}

void *realloc(void *p, size_t n)
{
    static realloc_fn real;
    if (!real) {
        void *sym = next_symbol("realloc");
        memcpy(&real, &sym, sizeof real);
    }
    const char *limit = getenv("LBK_FAIL_REALLOC_ABOVE");
    if (limit && *limit && n > strtoull(limit, NULL, 10)) {
        errno = ENOMEM;
        return NULL;
    }
    return real(p, n);
}
