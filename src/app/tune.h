/* Which kernel parameters a run's device gets, and `lbknn tune`, which
 * measures them. Precedence: the job's tuning.* keys (those not 0), then
 * the tuning cache (tune_cache.h) when tuning.cache is on and it holds this
 * device, then the parameters derived from the device. A run never tunes by
 * itself: a measurement takes seconds, and the derived parameters are
 * within a few percent of the tuned ones on the CPUs measured
 * (bench/results/cpu.md). */
#ifndef LBK_TUNE_H
#define LBK_TUNE_H

#include "device.h"
#include "job.h"
#include "status.h"
#include "tuning.h"

/* Keep the device's built programs under cache_dir/programs (device.h:
 * lbk_device_set_program_cache); nothing when cache_dir is empty. */
void lbk_tune_use_cache_dir(lbk_device *dev, const char *cache_dir);

/* The parameters for this job on this device; cache_dir may be empty (no
 * cache). Never fails: a bad cache file is ignored with a warning. `file`
 * gets the name of the cache file looked for in cache_dir ("" when none
 * was: no directory, or tuning.cache off). */
void lbk_tune_for_job(const lbk_job *job, const lbk_device *dev, const char *cache_dir,
                      lbk_tuning *out, char *file, size_t file_size);

/* lbknn tune [--type gpu|cpu|any] [--device N]: measure the device's
 * parameters, write them to its cache file under cache_dir, print them. */
lbk_status lbk_tune_command(int argc, char **argv, const char *cache_dir);

#endif
