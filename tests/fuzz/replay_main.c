/* Replays fuzz inputs through a harness without libFuzzer, so that the seed
 * corpus and every crasher found stay a regression test in the ordinary gcc
 * build. Arguments are files or directories of files. */
#include "fuzz_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *grown = realloc(data, cap);
            if (!grown) {
                fclose(f);
                free(data);
                fprintf(stderr, "%s: out of memory\n", path);
                return 1;
            }
            data = grown;
        }
        size_t got = fread(data + size, 1, cap - size, f);
        size += got;
        if (got == 0)
            break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(data);
        fprintf(stderr, "%s: read error\n", path);
        return 1;
    }
    fprintf(stderr, "replay %s (%zu bytes)\n", path, size);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order, so that a failure reproduces. */
static int replay_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot open directory\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int failed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, cap * sizeof *grown);
            if (!grown) {
                failed = 1;
                break;
            }
            names = grown;
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n]) {
            failed = 1;
            break;
        }
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (!failed)
            failed = replay_file(names[i]);
        ++*count;
        free(names[i]);
    }
    free(names);
    return failed;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "%s: no such file or directory\n", argv[i]);
            return 1;
        }
        int failed;
        if (S_ISDIR(sb.st_mode)) {
            failed = replay_dir(argv[i], &count);
        } else {
            failed = replay_file(argv[i]);
            count++;
        }
        if (failed)
            return 1;
    }
    if (count == 0) {
        fprintf(stderr, "no inputs replayed\n");
        return 1;
    }
    fprintf(stderr, "replayed %d inputs\n", count);
    return 0;
}
