/* Fuzz target for job files and --set overrides.
 *
 * Byte 0 picks the mode. Even: the rest is a job file for lbk_job_load.
 * Odd: the rest is a list of NUL-separated "--set" assignments applied to
 * the defaults with lbk_job_set. Besides memory safety it checks what
 * job.h promises: a loaded job passes lbk_job_validate, a rejected
 * override leaves the job unchanged, and printing a job and loading the
 * print gives the same job back (when its input paths are absolute). */
#include "fuzz_util.h"

#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lbk_job_print into a malloc'd string. */
static char *print_job(const lbk_job *job)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        lbk_fuzz_fail("open_memstream");
    lbk_job_print(job, f, 0);
    if (fclose(f) != 0)
        lbk_fuzz_fail("printing the job");
    return text;
}

static bool absolute_or_empty(const char *path) { return path[0] == '\0' || path[0] == '/'; }

/* Well-formed UTF-8 (RFC 3629): only such paths survive YAML unchanged. */
static bool is_utf8(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        int n = *p < 0x80                  ? 1
                : *p >= 0xC2 && *p <= 0xDF ? 2
                : *p >= 0xE0 && *p <= 0xEF ? 3
                : *p >= 0xF0 && *p <= 0xF4 ? 4
                                           : 0;
        if (n == 0)
            return false;
        unsigned long cp = n == 1 ? *p : *p & (0x7F >> n);
        for (int i = 1; i < n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += n;
    }
    return true;
}

static bool paths_are_utf8(const lbk_job *job)
{
    const char *paths[] = {job->reference.path,   job->reference.labels,   job->query.path,
                           job->query.labels,     job->output.predictions, job->output.neighbors,
                           job->output.distances, job->output.report};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (!is_utf8(paths[i]))
            return false;
    return true;
}

/* The print of any job must load; print -> load -> print must be a fixed
 * point when every path is UTF-8 (other bytes cannot be spelt in YAML). */
static void check_round_trip(const lbk_job *job)
{
    /* Relative input paths would resolve against the printed file's
     * directory (and might then be too long). */
    if (!absolute_or_empty(job->reference.path) || !absolute_or_empty(job->reference.labels) ||
        !absolute_or_empty(job->query.path) || !absolute_or_empty(job->query.labels))
        return;
    const bool same = paths_are_utf8(job);
    char *first = print_job(job);
    const char *path = lbk_fuzz_path("round-trip.yaml");
    lbk_fuzz_write(path, first, strlen(first));
    lbk_job *again = malloc(sizeof *again);
    if (!again)
        lbk_fuzz_fail("malloc");
    if (lbk_job_load(path, again) != LBK_OK) {
        fprintf(stderr, "printed job:\n%s", first);
        lbk_fuzz_fail("a printed job does not load");
    }
    char *second = print_job(again);
    if (same && strcmp(first, second) != 0) {
        fprintf(stderr, "printed job:\n%s\nreloaded and printed:\n%s", first, second);
        lbk_fuzz_fail("print -> load -> print changed the job");
    }
    free(second);
    free(again);
    free(first);
}

static void fuzz_load(const uint8_t *data, size_t size)
{
    const char *path = lbk_fuzz_path("job.yaml");
    lbk_fuzz_write(path, data, size);
    lbk_job *job = malloc(sizeof *job);
    if (!job)
        lbk_fuzz_fail("malloc");
    if (lbk_job_load(path, job) == LBK_OK) {
        if (lbk_job_validate(job) != LBK_OK)
            lbk_fuzz_fail("a loaded job fails lbk_job_validate");
        check_round_trip(job);
    }
    free(job);
}

static void fuzz_set(const uint8_t *data, size_t size)
{
    /* A private NUL-terminated copy: assignments are C strings. */
    char *text = malloc(size + 1);
    lbk_job *job = malloc(sizeof *job);
    if (!text || !job)
        lbk_fuzz_fail("malloc");
    memcpy(text, data, size);
    text[size] = '\0';
    lbk_job_defaults(job);
    for (const char *a = text; a <= text + size; a += strlen(a) + 1) {
        char *before = print_job(job);
        if (lbk_job_set(job, a) != LBK_OK) {
            char *after = print_job(job);
            if (strcmp(before, after) != 0)
                lbk_fuzz_fail("a rejected --set changed the job");
            free(after);
        }
        free(before);
    }
    if (lbk_job_validate(job) == LBK_OK)
        check_round_trip(job);
    free(job);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_set(data + 1, size - 1);
    else
        fuzz_load(data + 1, size - 1);
    return 0;
}
