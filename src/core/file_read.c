#include "file_read.h"

#include "log.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

lbk_status lbk_open_for_reading(const char *path, const char *what, lbk_status failure,
                                FILE **out)
{
    lbk_status st = LBK_OK;
    const char *sep = what ? " " : "";
    struct stat sb;
    *out = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) {
        lbk_error("%s: cannot open%s%s: %s", path, sep, what ? what : "", strerror(errno));
        st = failure;
        goto cleanup;
    }
    if (fstat(fileno(file), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        lbk_error("%s: cannot open%s%s: %s", path, sep, what ? what : "", strerror(EISDIR));
        st = failure;
        goto cleanup;
    }
    *out = file;
    file = NULL;
cleanup:
    if (file)
        fclose(file);
    return st;
}
