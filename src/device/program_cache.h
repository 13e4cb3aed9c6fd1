/* Private to the device layer: built programs kept on disk between runs.
 * PoCL compiles every program from source again in each process (its own
 * cache holds only the per-launch kernel code): 30-50 ms of clang for each
 * of lbknn's programs, a fifth of building a 1e6-point k-d tree. A program
 * built from a binary takes about 2 ms. One file per device, driver, lbknn
 * version, options and kernel text: DIR/program-<hash>.bin, with a header
 * that names all of them and a checksum of the binary, so that a truncated,
 * corrupt or foreign file is never handed to the OpenCL implementation; it
 * is rebuilt from source and replaced instead. */
#ifndef LBK_PROGRAM_CACHE_H
#define LBK_PROGRAM_CACHE_H

#include "device_cl.h"

#include <stdbool.h>

/* The program for `text` and `options` from the cache directory `dir`,
 * built; false when there is none that loads and builds (nothing logged). */
bool lbk_program_cache_load(const lbk_device *dev, const char *dir, const char *text,
                            const char *options, cl_program *out);

/* Keep a program built from `text` and `options` (best effort: a cache
 * that cannot be written only costs the next run its compile time). */
void lbk_program_cache_store(const lbk_device *dev, const char *dir, const char *text,
                             const char *options, cl_program program);

#endif
