#include "file_read.h"

#include "log.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

lbk_status lbk_file_read_open(const char *path, const char *what, lbk_status failure, FILE **out)
{
    lbk_status st = LBK_OK;
    const char *sep = what ? " " : "";
    struct stat sb;
    *out = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) {
        const int saved = errno;
        lbk_error("%s: cannot open%s%s: %s", path, sep, what ? what : "", strerror(saved));
        /* A missing or forbidden file is the job's fault; running out of
         * memory or descriptors, or a failing disk, is not. */
        st = saved == ENOMEM                                      ? LBK_ERR_NOMEM
             : saved == EIO || saved == EMFILE || saved == ENFILE ? LBK_ERR_IO
                                                                  : failure;
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
