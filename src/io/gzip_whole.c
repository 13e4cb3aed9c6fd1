/* mmap and fileno are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "gzip_whole.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <sys/mman.h>

/* The size the gzip trailer records: the decompressed length mod 2^32 (a
 * longer file fails to decompress into it and is streamed). */
static uint64_t trailer_size(const unsigned char *in, size_t n)
{
    const unsigned char *t = in + n - 4;
    return (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
}

/* in: the whole file; *out when it is one member that decompresses to its
 * trailer's size. */
static void inflate_member(const unsigned char *in, size_t n, unsigned char **out,
                           size_t *out_len)
{
    const uint64_t size = trailer_size(in, n);
    if (size > LBK_GZIP_WHOLE_MAX)
        return;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    unsigned char *buf = malloc(size ? (size_t)size : 1);
    size_t used = 0, made = 0;
    if (d && buf &&
        libdeflate_gzip_decompress_ex(d, in, n, buf, (size_t)size, &used, &made) ==
            LIBDEFLATE_SUCCESS &&
        used == n && made == size) {
        *out = buf;
        *out_len = made;
        buf = NULL;
    }
    free(buf);
    if (d)
        libdeflate_free_decompressor(d);
}

void lbk_gzip_whole(FILE *file, uint64_t bytes, unsigned char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    /* 18 bytes: the smallest gzip member (header and trailer). */
    if (bytes < 18 || bytes > LBK_GZIP_WHOLE_MAX)
        return;
    /* Mapped rather than read into fresh anonymous pages, which cost a
     * zeroing each (on a VM after another process freed memory, about as
     * much as the decompression). */
    void *in = mmap(NULL, (size_t)bytes, PROT_READ, MAP_PRIVATE, fileno(file), 0);
    if (in == MAP_FAILED)
        return;
    inflate_member(in, (size_t)bytes, out, out_len);
    munmap(in, (size_t)bytes);
}
