/* Opening a file for reading with the checks every reader wants: a clear
 * message naming the path, and a directory refused at once (fopen accepts
 * one, and the first read would then fail with a vaguer error). */
#ifndef LBK_FILE_READ_H
#define LBK_FILE_READ_H

#include "status.h"

#include <stdio.h>

/* On failure logs "PATH: cannot open[ WHAT]: reason" and returns `failure`
 * (the caller's kind of error: a job file is a config error, a data file an
 * input error). what may be NULL. */
lbk_status lbk_file_read_open(const char *path, const char *what, lbk_status failure, FILE **out);

#endif
