/* The files of a saved index (docs/design.md, "A saved index"): flat binary
 * files in one directory, each recorded in a text manifest of `key = value`
 * lines as `file.NAME = BYTES CRC32`, so that a missing, truncated or
 * corrupted file is refused by name before anything uses it. Knows nothing
 * of what the files hold. */
#ifndef LBK_SAVED_H
#define LBK_SAVED_H

#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LBK_SAVED_MANIFEST "manifest.txt"

/* CRC-32 (zlib's: IEEE 802.3, reflected) of len bytes, continuing crc:
 * the checksum of every saved file, and of a checkpoint's partial outputs. */
uint32_t lbk_saved_crc32(uint32_t crc, const void *data, size_t len);

/* Writes `bytes` bytes to DIR/NAME (created or replaced) and appends its
 * `file.NAME = BYTES CRC` line to lines[*used .. size). */
lbk_status lbk_saved_write(const char *dir, const char *name, const void *data, uint64_t bytes,
                           char *lines, size_t size, size_t *used);

/* Reads DIR/NAME into data (`bytes` bytes, which the manifest must record)
 * and checks its size and CRC against the manifest's line. */
lbk_status lbk_saved_read(const char *dir, const char *name, const char *manifest, void *data,
                          uint64_t bytes);

/* lbk_saved_read without keeping the file: `take` gets it piece by piece,
 * each of n bytes at byte `at` of the file, in order (a piece may end
 * inside a row). The CRC is checked once the last piece is taken: on
 * failure the caller must drop what it took. */
typedef void (*lbk_saved_take)(void *user, const unsigned char *piece, uint64_t at, size_t n);
lbk_status lbk_saved_read_pieces(const char *dir, const char *name, const char *manifest,
                                 uint64_t bytes, lbk_saved_take take, void *user);

/* The manifest DIR/manifest.txt, written atomically (a temporary file,
 * fsync, rename), and read whole (*text malloc'ed, NUL-terminated; a
 * missing directory or manifest says so). */
lbk_status lbk_saved_manifest_write(const char *dir, const char *text, size_t len);
lbk_status lbk_saved_manifest_read(const char *dir, char **text);

/* The value of `key` (the text after "key = " up to the line's end), into
 * value; false when the key is absent or its value does not fit. */
bool lbk_saved_get(const char *manifest, const char *key, char *value, size_t size);
bool lbk_saved_get_u64(const char *manifest, const char *key, uint64_t *value);

/* Creates DIR (and nothing above it) unless it exists as a directory. */
lbk_status lbk_saved_make_dir(const char *dir);

#endif
