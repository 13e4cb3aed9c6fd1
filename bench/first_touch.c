/* What a process pays to touch memory it has never used: one fresh
 * anonymous mapping of MB MiB, written once per 4 KiB page, timed, then
 * written again (the same pages, now present), timed. On bare metal the
 * first pass costs the kernel's page zeroing; under a hypervisor it can
 * also cost the host's backing of the guest's pages, which depends on what
 * the guest freed recently, not on this program: bench/first_touch.sh runs
 * it alone and two at once to show how much that varies.
 *
 *   first_touch MB huge|plain [MAPPINGS (1)]
 *
 * huge: the mapping is 2 MiB-aligned and marked MADV_HUGEPAGE, as
 * lbk_alloc_large's arrays are; plain: 4 KiB pages. MAPPINGS: map, touch
 * and unmap that many times in a row (the second one gets the pages the
 * first gave back a moment before). Prints a line per mapping:
 * "MB huge|plain first_s second_s ms_per_MiB". */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define SMALL_PAGE ((size_t)4096)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One store per page: what a first touch costs, not a memset's bandwidth. */
static double touch(volatile unsigned char *p, size_t bytes, unsigned char value)
{
    const double t = now();
    for (size_t at = 0; at < bytes; at += SMALL_PAGE)
        p[at] = value;
    return now() - t;
}

/* One mapping: mapped, touched twice, unmapped; 0, or 1 if mmap failed. */
static int measure(size_t mb, int huge)
{
    const size_t bytes = mb << 20, mapped = bytes + HUGE_PAGE;
    unsigned char *base =
        mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("first_touch: mmap");
        return 1;
    }
    unsigned char *p = base;
    if (huge) {
        p = (unsigned char *)(((uintptr_t)base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
        (void)madvise(p, bytes, MADV_HUGEPAGE);
    }
    const double first = touch(p, bytes, 1), second = touch(p, bytes, 2);
    printf("%zu %s %.6f %.6f %.3f\n", mb, huge ? "huge" : "plain", first, second,
           1e3 * first / (double)mb);
    munmap(base, mapped);
    return 0;
}

int main(int argc, char **argv)
{
    const long mb = argc >= 3 ? strtol(argv[1], NULL, 10) : 0;
    const int huge = argc >= 3 && strcmp(argv[2], "huge") == 0;
    const long mappings = argc == 4 ? strtol(argv[3], NULL, 10) : 1;
    if (argc > 4 || mb <= 0 || mb > 1 << 20 || mappings < 1 || mappings > 1000 ||
        (!huge && strcmp(argv[2], "plain") != 0)) {
        fprintf(stderr, "usage: first_touch MB huge|plain [MAPPINGS]\n");
        return 2;
    }
    for (long i = 0; i < mappings; i++)
        if (measure((size_t)mb, huge) != 0)
            return 1;
    return 0;
}
