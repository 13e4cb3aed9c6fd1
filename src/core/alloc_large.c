/* madvise, MADV_HUGEPAGE and MAP_ANONYMOUS are not POSIX. */
#define _DEFAULT_SOURCE
#include "alloc_large.h"

#include "log.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writing 100k queries' K = 16 lists and results (51 MB) into fresh 4 KiB
 * pages took 40-50 ms of a 0.26 s tree query phase in page faults, under a
 * kernel whose transparent huge pages are "madvise" (Debian's default). */
#define HUGE_PAGE ((size_t)2 << 20)

/* Guard mode's live mappings. A debug mode holds few arrays at a time, so
 * a list searched from its end (the newest first) is enough. */
typedef struct {
    void *user, *base;
    size_t length;
} guarded_map;

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static bool guard_read, guard_on;
static guarded_map *guard_maps;
static size_t guard_count, guard_cap;

static void read_guard_setting(void)
{
    const char *v = getenv("LBKNN_GUARD_PAGES");
    guard_on = v && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Under guard_lock rather than pthread_once: Helgrind does not model
 * pthread_once, and a suppression of the read that it then reports
 * matched every function the read is inlined into. A large allocation
 * is rare enough for a mutex. */
bool lbk_alloc_large_guarded(void)
{
    pthread_mutex_lock(&guard_lock);
    if (!guard_read) {
        read_guard_setting();
        guard_read = true;
    }
    const bool on = guard_on;
    pthread_mutex_unlock(&guard_lock);
    return on;
}

static bool remember(void *user, void *base, size_t length)
{
    bool ok = true;
    pthread_mutex_lock(&guard_lock);
    if (guard_count == guard_cap) {
        const size_t cap = guard_cap ? 2 * guard_cap : 64;
        guarded_map *grown = realloc(guard_maps, cap * sizeof *grown);
        ok = grown != NULL;
        if (ok) {
            guard_maps = grown;
            guard_cap = cap;
        }
    }
    if (ok)
        guard_maps[guard_count++] = (guarded_map){user, base, length};
    pthread_mutex_unlock(&guard_lock);
    return ok;
}

/* Removes p's mapping from the list into *out; false when p is not one. */
static bool forget(const void *p, guarded_map *out)
{
    bool found = false;
    pthread_mutex_lock(&guard_lock);
    for (size_t i = guard_count; i-- > 0;)
        if (guard_maps[i].user == p) {
            *out = guard_maps[i];
            guard_maps[i] = guard_maps[--guard_count];
            found = true;
            break;
        }
    pthread_mutex_unlock(&guard_lock);
    return found;
}

static void *alloc_guarded(size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes > SIZE_MAX - 2 * page)
        return NULL;
    const size_t body = (bytes + page - 1) / page * page, length = body + page;
    unsigned char *base =
        mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    void *user = base + body - bytes;
    if (mprotect(base + body, page, PROT_NONE) != 0 || !remember(user, base, length)) {
        munmap(base, length);
        return NULL;
    }
    return user;
}

void *lbk_alloc_large_logged(uint64_t count, size_t size, const char *what, lbk_status *st)
{
    const bool fits = size == 0 || count <= SIZE_MAX / size;
    void *p = fits ? lbk_alloc_large((size_t)count * size) : NULL;
    if (!p) {
        lbk_error("out of host memory for %s (%llu x %zu bytes)", what, (unsigned long long)count,
                  size);
        *st = LBK_ERR_NOMEM;
    }
    return p;
}

void *lbk_alloc_large(size_t bytes)
{
    if (lbk_alloc_large_guarded())
        return alloc_guarded(bytes);
    if (bytes < LBK_ALLOC_LARGE_BYTES)
        return malloc(bytes ? bytes : 1);
    if (bytes > SIZE_MAX - HUGE_PAGE)
        return NULL;
    const size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Advice only: where huge pages are off or unavailable, plain pages. */
    (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

void lbk_alloc_large_free(void *p)
{
    guarded_map map;
    if (p && lbk_alloc_large_guarded() && forget(p, &map)) {
        munmap(map.base, map.length);
        return;
    }
    free(p);
}
