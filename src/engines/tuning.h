/* The kernel parameters a device runs with: the blocked distance kernel's
 * vector lanes and register block, its work-group, and the k-d tree
 * builder's segment size. They are chosen per device - derived from what the
 * device reports, measured by `lbknn tune` (cached on disk by the app), or
 * set by the job - and never change a result: every setting computes the
 * same keys in the same order (the tests force several). */
#ifndef LBK_TUNING_H
#define LBK_TUNING_H

#include "device.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where a parameter set came from, as the summary and report say. */
typedef enum {
    LBK_TUNING_DERIVED = 0, /* from the device's reports (lbk_tuning_derive) */
    LBK_TUNING_CACHE,       /* measured by `lbknn tune`, read from its cache file */
    LBK_TUNING_JOB          /* the job set at least one of them */
} lbk_tuning_source;

typedef struct {
    /* Brute force, blocked (CPU) distance kernel: LBK_VW, LBK_VQB, LBK_VRB,
     * LBK_QT and LBK_KC of kernels/brute.cl. */
    int lanes;         /* floats per vector: 4, 8 or 16 */
    int block_queries; /* register block: queries ... */
    int block_vectors; /* ... x reference vectors (of `lanes` rows) */
    int tile_blocks;   /* register blocks of queries per work-item */
    int slice;         /* dimensions per slice (the L1-resident reference tile) */
    /* k-d tree build: runs of at most 2^segment_log2 points are sorted one
     * per work-item (kd_seg_sort), longer ones by the global radix sort. */
    int segment_log2;
    lbk_tuning_source source;
} lbk_tuning;

/* Bounds every parameter is checked against (job keys, cache files). */
#define LBK_TUNING_MAX_BLOCK_QUERIES 16
#define LBK_TUNING_MAX_BLOCK_VECTORS 8
#define LBK_TUNING_MAX_TILE_BLOCKS 32
#define LBK_TUNING_MIN_SLICE 8
#define LBK_TUNING_MAX_SLICE 4096
#define LBK_TUNING_MIN_SEGMENT_LOG2 4
#define LBK_TUNING_MAX_SEGMENT_LOG2 24

/* The vector width a CPU device compiles for, in bits (512 for
 * "skylake-avx512", 256 for "haswell" or "znver3", ...), read from the LLVM
 * CPU name in its name or version string (PoCL: "pthread-haswell-...",
 * "HSTR: pthread-x86_64-pc-linux-gnu-haswell"); 0 when the name says
 * nothing. PoCL's reported native width follows the host CPU, not the
 * variant it compiles for, so the name decides where both are known. */
int lbk_tuning_cpu_vector_bits(const char *name, const char *version);

/* The parameters this device's reports imply. */
void lbk_tuning_derive(const lbk_device *dev, lbk_tuning *out);

/* True when every parameter is in range; otherwise false with the first
 * problem in why ("block_queries = 40: must be 1..16"). */
bool lbk_tuning_valid(const lbk_tuning *t, char *why, size_t why_size);

const char *lbk_tuning_source_name(lbk_tuning_source source);

/* "lanes=8 block=6x2 tile=8 slice=128 segment=2^16". */
void lbk_tuning_format(const lbk_tuning *t, char *buf, size_t size);

/* `lbknn tune`: time the candidate settings on this device with synthetic
 * data (a few seconds in all) and return the fastest (source CACHE); each
 * candidate's time is printed to `log` when it is not NULL. */
lbk_status lbk_tuning_measure(lbk_device *dev, FILE *log, lbk_tuning *out);

#endif
