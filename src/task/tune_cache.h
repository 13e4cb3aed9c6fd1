/* The tuning cache: the kernel parameters `lbknn tune` measured for one
 * device, one file per device, driver and lbknn version
 * (DIR/tune-<hash>.yaml, DIR = lbk_tune_cache_dir, beside the programs
 * `lbknn run` keeps in DIR/programs). Read by both of the device's clients,
 * `lbknn run` and the library (device_tuning.h chooses between it, the
 * options and the derived parameters). A flat YAML mapping that names what
 * it was measured on; a file that is unreadable, malformed, out of range or
 * written for another device is ignored with a warning (to the log: stderr
 * for `lbknn`, the callback for the library), and the derived parameters
 * are used: the parameters never change a result, so a bad cache can only
 * cost speed. */
#ifndef LBK_TUNE_CACHE_H
#define LBK_TUNE_CACHE_H

#include "device.h"
#include "status.h"
#include "tuning.h"

#include <stdbool.h>
#include <stddef.h>

/* The cache directory: $XDG_CACHE_HOME/lbknn (an absolute XDG_CACHE_HOME
 * only, as the XDG spec says), else $HOME/.cache/lbknn; false (and "")
 * when neither is set or the path does not fit. */
bool lbk_tune_cache_dir(char *dir, size_t size);

/* DIR/tune-<16 hex digits>.yaml for this device; false (and an empty path)
 * when dir is empty or the path does not fit. */
bool lbk_tune_cache_path(const char *dir, const lbk_device *dev, char *path, size_t size);

typedef enum {
    LBK_TUNE_CACHE_MISSING, /* no file: nothing said */
    LBK_TUNE_CACHE_USED,    /* *out holds its parameters (source CACHE) */
    LBK_TUNE_CACHE_IGNORED  /* unreadable, malformed or foreign: warned */
} lbk_tune_cache_result;

/* Read the cache file at `path` for this device. */
lbk_tune_cache_result lbk_tune_cache_read(const char *path, const lbk_device *dev,
                                          lbk_tuning *out);

/* Write (replace) the cache file for this device, creating its directory;
 * `comment` (may be NULL) goes into the file as # lines. */
lbk_status lbk_tune_cache_write(const char *path, const lbk_device *dev, const lbk_tuning *t,
                                const char *comment);

#endif
