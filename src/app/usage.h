/* The command line's help text and its one way of refusing a command line. */
#ifndef LBK_USAGE_H
#define LBK_USAGE_H

#include "status.h"

#include <stdio.h>

void lbk_usage(FILE *out);

/* Logs "<fmt with arg> (see 'lbknn --help')" and returns LBK_ERR_USAGE. */
lbk_status lbk_usage_error(const char *fmt, const char *arg);

#endif
