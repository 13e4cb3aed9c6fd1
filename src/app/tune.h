/* `lbknn tune`, which measures the kernel parameters of a device and keeps
 * them in the tuning cache (src/task/tune_cache.h), and the program cache
 * beside it. Which parameters a run's device gets: src/task/device_tuning.h,
 * shared with the library. */
#ifndef LBK_TUNE_H
#define LBK_TUNE_H

#include "device.h"
#include "status.h"

/* Keep the device's built programs under cache_dir/programs (device.h:
 * lbk_device_set_program_cache); nothing when cache_dir is empty. */
void lbk_tune_use_cache_dir(lbk_device *dev, const char *cache_dir);

/* lbknn tune [--type gpu|cpu|any] [--device N]: measure the device's
 * parameters, write them to its cache file under cache_dir, print them. */
lbk_status lbk_tune_command(int argc, char **argv, const char *cache_dir);

#endif
