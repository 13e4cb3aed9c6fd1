/* `lbknn generate DIR [...]`: a seeded labelled synthetic data set (the
 * built-in Gaussian blobs) in one of the input formats, and DIR/job.yaml
 * that classifies its queries. */
#ifndef LBK_GENERATE_H
#define LBK_GENERATE_H

#include "status.h"

/* argv: the arguments after "generate". */
lbk_status lbk_generate(int argc, char **argv);

#endif
