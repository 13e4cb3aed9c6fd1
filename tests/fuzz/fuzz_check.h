/* Checks shared by the data-file harnesses: a whole read and a shard read of
 * the same source must agree, and what a read accepts must be valid. */
#ifndef LBK_FUZZ_CHECK_H
#define LBK_FUZZ_CHECK_H

#include "dataset_read.h"

#include <stdint.h>

/* A shard [lo, hi) picked from one fuzz byte; lo <= hi <= rows. */
void lbk_fuzz_pick_shard(uint8_t byte, uint64_t rows, uint64_t *lo, uint64_t *hi);

/* Probe, read everything, read a shard: the shard must equal the same rows
 * of the whole read, and every accepted value must be finite (labels >= 0). */
void lbk_fuzz_check_source(const lbk_job_input_spec *spec, uint8_t shard_byte);

/* The same for a label file read through the label readers directly. */
void lbk_fuzz_check_labels(const char *path, lbk_format format, uint8_t shard_byte);

#endif
