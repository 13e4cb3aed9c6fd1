/* Writes lbknn/_status.py, Python's names for the library's codes, at build
 * time: the names of the status list's PUBLIC rows (src/core/status.h)
 * without "LBKNN_", the values lbknn.h gives them. Built and run by
 * src/python/CMakeLists.txt, so that Python's constants cannot drift from
 * the library's, and `import lbknn` needs no library to know them. */
#include "lbknn.h"
#include "status.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* LBKNN_ERR_IO -> ERR_IO: the module already says lbknn. */
static const char *python_name(const char *code)
{
    static const char prefix[] = "LBKNN_";
    return strncmp(code, prefix, strlen(prefix)) == 0 ? code + strlen(prefix) : code;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT.py\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fputs("# Generated at build time by src/python/status_constants.c: lbknn_status's\n"
          "# codes (lbknn.h), named by the status list (src/core/status.h) without\n"
          "# \"LBKNN_\". Do not edit.\n",
          f);
#define PUBLIC_LINE_(code, message) fprintf(f, "%s = %d\n", python_name(#code), (int)(code));
    LBK_STATUS_LIST(PUBLIC_LINE_, LBK_STATUS_SKIP_STATUS)
#undef PUBLIC_LINE_
    const bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
