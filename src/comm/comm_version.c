/* The MPI library this process runs with, for --version. */
#include "comm.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

void lbk_comm_library_version(char *buf, size_t size)
{
    /* MPI_Get_library_version may be called before MPI_Init (MPI 3.0), so
     * --version starts no MPI. Open MPI's text is one line; others may run
     * to several, of which the first names the library. */
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) {
        snprintf(buf, size, "unknown");
        return;
    }
    text[len < 0 ? 0 : len >= (int)sizeof text ? (int)sizeof text - 1 : len] = '\0';
    text[strcspn(text, "\r\n")] = '\0';
    snprintf(buf, size, "%s", text);
}
