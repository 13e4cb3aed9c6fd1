/* LD_PRELOAD for the sanitized test run only: dlclose keeps every library
 * loaded. PoCL unloads its device drivers and built kernels before the
 * process ends, and LeakSanitizer's report at exit can then name no module
 * for their allocations, so the suppressions (lsan.supp), which match by
 * library, could not tell PoCL's leaks from lbknn's. */
#include <stddef.h>

int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
