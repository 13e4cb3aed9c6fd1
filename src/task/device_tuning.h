/* The kernel parameters a job's device runs with: one place for both of
 * the device's clients (`lbknn run` and the library's index), so that they
 * cannot choose differently. Precedence: the job's tuning.* keys (those
 * not 0), then the tuning cache (tune_cache.h) when tuning.cache is on and
 * it holds this device, then the parameters derived from the device. A run
 * never tunes by itself: a measurement takes seconds, and the derived
 * parameters are within a few percent of the tuned ones on the CPUs
 * measured (bench/results/cpu.md). */
#ifndef LBK_DEVICE_TUNING_H
#define LBK_DEVICE_TUNING_H

#include "device.h"
#include "job.h"
#include "tuning.h"

#include <stdbool.h>
#include <stddef.h>

/* The parameters for this job on this device; cache_dir may be empty (no
 * cache). Never fails: a bad cache file is ignored with a warning. `file`
 * (may be NULL) gets the name of the cache file looked for in cache_dir
 * ("" when none was: no directory, or tuning.cache off). */
void lbk_device_tuning_from_job(const lbk_job *job, const lbk_device *dev, const char *cache_dir,
                                lbk_tuning *out, char *file, size_t file_size);

/* The job's non-zero tuning.* keys over `t` (its source unchanged); true
 * when any was set. */
bool lbk_device_tuning_apply_job(const lbk_job *job, lbk_tuning *t);

#endif
