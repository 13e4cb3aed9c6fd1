/* Shared by the fuzz harnesses: a private scratch directory for the files
 * the readers need, and the entry point both drivers (libFuzzer and the
 * gcc replay main) call. */
#ifndef LBK_FUZZ_UTIL_H
#define LBK_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* DIR/name inside one scratch directory made on first use and removed at
 * exit; the returned string lives until the next call. */
const char *lbk_fuzz_path(const char *name);

/* Writes size bytes to path; aborts on failure (a harness bug, not a find). */
void lbk_fuzz_write(const char *path, const void *data, size_t size);

/* Aborts with a message: how a harness reports a broken invariant. */
void lbk_fuzz_fail(const char *what) __attribute__((noreturn));

#endif
