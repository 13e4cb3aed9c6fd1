/* FNV-1a, 64 bits: the hash of the program and tuning caches' names and
 * checksums and of the launch check's command lines. Fast and stable
 * across builds and machines (cache files keep their names); not a
 * defence against a chosen collision. */
#ifndef LBK_FNV_H
#define LBK_FNV_H

#include <stddef.h>
#include <stdint.h>

#define LBK_FNV_OFFSET UINT64_C(14695981039346656037)

/* h (LBK_FNV_OFFSET to start) continued over len bytes of data. */
uint64_t lbk_fnv_update(uint64_t h, const void *data, size_t len);

#endif
