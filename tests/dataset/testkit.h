/* Fixtures for the dataset tests: a scratch directory, byte builders that
 * encode independently of src/, stderr capture, and range checks on the
 * harness's assertions (lbk_test.h). */
#ifndef LBK_DATASET_TESTKIT_H
#define LBK_DATASET_TESTKIT_H

#include "dataset_read.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Scratch directory, created on first use and removed at exit. */
const char *tk_dir(void);
/* "<dir>/<name>", recorded for removal; valid until exit. */
const char *tk_path(const char *name);

/* Growable byte buffer for hand-built binary fixtures. */
typedef struct {
    unsigned char *b;
    size_t n, cap;
} tk_bytes;
void tk_u8(tk_bytes *w, unsigned v);
void tk_le32(tk_bytes *w, uint32_t v);
void tk_be32(tk_bytes *w, uint32_t v);
void tk_f32le(tk_bytes *w, float v);
void tk_f32be(tk_bytes *w, float v);
void tk_free(tk_bytes *w);
/* A .npy prefix and header (version 1.0, or 2.0 with a uint32 length) for
 * the dict text given, padded with spaces and a newline to 64 bytes. */
void tk_npy_header(tk_bytes *w, int version, const char *dict);

void tk_write_file(const char *path, const void *data, size_t n);
void tk_write_text(const char *path, const char *text);
/* Whole file into a NUL-terminated heap buffer. */
char *tk_read_file(const char *path, size_t *n);
/* gzip a file with zlib. */
void tk_gzip(const char *from, const char *to);

/* Sends stderr to a file until tk_capture_end, which returns what was
 * written (heap string). */
void tk_capture_begin(void);
char *tk_capture_end(void);

/* Reads [lo, hi) and compares it with rows [lo, hi) of the expected arrays
 * (labels may be NULL: then the result must have none). */
void tk_check_range(const lbk_job_input_spec *spec, uint64_t lo, uint64_t hi, const float *points,
                    const int32_t *labels, int dim);
/* Whole, empty at both ends, first row, last row, a middle slice. */
void tk_check_ranges(const lbk_job_input_spec *spec, const float *points, const int32_t *labels,
                     uint64_t rows, int dim);

lbk_job_input_spec tk_spec(const char *path);

#endif
