#include "rlimit.h"

#include "log.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)

uint64_t lbk_rlimit_as_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return UINT64_MAX;
    return (uint64_t)rl.rlim_cur;
}

uint64_t lbk_rlimit_as_used(void)
{
    /* statm's first field: the whole virtual size, in pages. */
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%llu", &pages) != 1)
        pages = 0;
    fclose(f);
    const long page = sysconf(_SC_PAGESIZE);
    return (uint64_t)pages * (uint64_t)(page > 0 ? page : 4096);
}

uint64_t lbk_rlimit_as_room(void)
{
    const uint64_t limit = lbk_rlimit_as_limit();
    if (limit == UINT64_MAX)
        return UINT64_MAX;
    const uint64_t used = lbk_rlimit_as_used();
    return limit > used ? limit - used : 0;
}

lbk_status lbk_rlimit_as_require(uint64_t need, const char *what)
{
    const uint64_t room = lbk_rlimit_as_room();
    if (room >= need)
        return LBK_OK;
    lbk_error("the address-space limit (ulimit -v, SGE h_vmem) of %.0f MiB leaves %.0f MiB; %s "
              "needs at least %.0f MiB: raise the limit",
              (double)lbk_rlimit_as_limit() / MIB, (double)room / MIB, what, (double)need / MIB);
    return LBK_ERR_NOMEM;
}

lbk_status lbk_rlimit_fsize_require(uint64_t need, const char *what)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        (uint64_t)rl.rlim_cur >= need)
        return LBK_OK;
    lbk_error("the file-size limit (ulimit -f) of %.0f KiB is below the %.0f MiB %s needs: "
              "raise the limit",
              (double)rl.rlim_cur / 1024.0, (double)need / MIB, what);
    return LBK_ERR_IO;
}
