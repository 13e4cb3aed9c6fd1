/* LD_PRELOAD shim for bad_inputs.sh: every pwrite to a neighbours output
 * being written (a name ending in "nn.ivecs.lbknn-partial") fails with
 * ENOSPC, the way a full disk does, so the write-failure path runs without
 * privileges or a real full file system. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset)
{
    static pwrite_fn real;
    if (!real) {
        /* memcpy: ISO C has no cast from an object to a function pointer. */
        void *sym = dlsym(RTLD_NEXT, "pwrite");
        memcpy(&real, &sym, sizeof real);
    }
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t len = readlink(link, target, sizeof target - 1);
    if (len > 0) {
        target[len] = '\0';
        const char *tail = "nn.ivecs.lbknn-partial";
        const size_t tl = strlen(tail);
        if ((size_t)len >= tl && strcmp(target + len - tl, tail) == 0) {
            errno = ENOSPC;
            return -1;
        }
    }
    return real(fd, buf, n, offset);
}
