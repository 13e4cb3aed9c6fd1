/* Input paths in a job file are relative to the job file, made absolute at
 * load time, so that they stay right whatever directory the job is later
 * printed to or run from. Output paths are not resolved here: they stay
 * relative to the working directory. */
#include "job_parse.h"

#include <unistd.h>

static bool is_absolute(const char *p) { return p[0] == '/'; }

/* dir + "/" + rel, without the "./" noise of a relative rel. Returns false
 * when the result does not fit. */
static bool join_path(const char *dir, const char *rel, char *out, size_t size)
{
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (strcmp(rel, ".") == 0 || rel[0] == '\0')
        return (size_t)snprintf(out, size, "%s", dir) < size;
    size_t n = strlen(dir);
    const char *sep = (n > 0 && dir[n - 1] == '/') ? "" : "/";
    return (size_t)snprintf(out, size, "%s%s%s", dir, sep, rel) < size;
}

void lbk_job_dir(const char *path, char *out, size_t size)
{
    char cwd[LBK_PATH_MAX];
    char dir[LBK_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (is_absolute(dir) || !getcwd(cwd, sizeof cwd) || !join_path(cwd, dir, out, size))
        snprintf(out, size, "%s", dir);
}

bool lbk_job_resolve_path(const char *base_dir, const char *text, char *out, size_t size)
{
    if (text[0] != '\0' && !is_absolute(text) && base_dir[0])
        return join_path(base_dir, text, out, size);
    return (size_t)snprintf(out, size, "%s", text) < size;
}
