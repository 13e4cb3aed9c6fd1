#include "tuning.h"

#include <stdio.h>
#include <string.h>

/* LLVM CPU names whose targets have 512-bit vectors (AVX-512F). */
static const char *const avx512_cpus[] = {
    "avx512",        "cascadelake", "cooperlake",     "cannonlake",    "icelake",
    "tigerlake",     "rocketlake",  "sapphirerapids", "graniterapids", "emeraldrapids",
    "diamondrapids", "znver4",      "znver5",         "knl",           "knm",
    "x86-64-v4",     NULL};
/* ... and 256-bit ones (AVX2 or AVX): the CPU of the 2x was PoCL's
 * "haswell" variant on an AMD EPYC. */
static const char *const avx256_cpus[] = {
    "haswell",      "broadwell",  "skylake",          "kabylake",  "coffeelake", "cometlake",
    "alderlake",    "raptorlake", "meteorlake",       "arrowlake", "lunarlake",  "gracemont",
    "sierraforest", "grandridge", "clearwaterforest", "znver1",    "znver2",     "znver3",
    "bdver",        "btver2",     "sandybridge",      "ivybridge", "x86-64-v3",  "avx2",
    "core-avx",     NULL};

static bool mentions(const char *text, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strstr(text, names[i]))
            return true;
    return false;
}

int lbk_tuning_cpu_vector_bits(const char *name, const char *version)
{
    /* "skylake-avx512" holds "skylake": the 512-bit list is checked first. */
    const char *texts[2] = {version, name};
    for (int i = 0; i < 2; i++) {
        if (!texts[i])
            continue;
        if (mentions(texts[i], avx512_cpus))
            return 512;
        if (mentions(texts[i], avx256_cpus))
            return 256;
    }
    return 0;
}

/* Vector registers of the ISA the device compiles for: 32 with AVX-512 (and
 * on AArch64), 16 with AVX/AVX2 and SSE. */
static int vector_registers(int bits) { return bits >= 512 ? 32 : 16; }

void lbk_tuning_derive(const lbk_device *dev, lbk_tuning *out)
{
    memset(out, 0, sizeof *out);
    const int native = lbk_device_native_float_width(dev);
    int bits = native > 0 ? 32 * native : 128;
    if (!lbk_device_is_gpu(dev)) {
        const int named =
            lbk_tuning_cpu_vector_bits(lbk_device_name(dev), lbk_device_version(dev));
        if (named > 0 && named < bits)
            bits = named;
        else if (named > 0 && native <= 0)
            bits = named;
    }
    out->lanes = bits >= 512 ? 16 : bits >= 256 ? 8 : 4;
    /* The register block: queries x vectors accumulators, plus the block's
     * reference vectors and one broadcast query value, must fit the vector
     * registers, or the accumulators spill (32 float8 accumulators on
     * 16 ymm registers were the AVX2 2x). Two vectors per query keep the
     * loads per fused multiply-add low. */
    const int regs = vector_registers(bits);
    out->block_vectors = 2;
    out->block_queries = (regs - out->block_vectors - 2) / out->block_vectors;
    if (out->block_queries > 8)
        out->block_queries = 8;
    /* Eight register blocks of queries share each reference slice; a slice
     * of 128 dimensions of 2 x 16 references is 16 KiB, well inside L1. */
    out->tile_blocks = 8;
    out->slice = 128;
    /* A CPU sorts runs of up to 64 Ki points fastest one per work-item (they
     * stay in its core's cache); a GPU wants many short runs. */
    out->segment_log2 = lbk_device_is_gpu(dev) ? 8 : 16;
    out->source = LBK_TUNING_DERIVED;
}

bool lbk_tuning_valid(const lbk_tuning *t, char *why, size_t why_size)
{
    const struct {
        const char *name;
        int value, lo, hi;
    } checks[] = {
        {"block_queries", t->block_queries, 1, LBK_TUNING_MAX_BLOCK_QUERIES},
        {"block_vectors", t->block_vectors, 1, LBK_TUNING_MAX_BLOCK_VECTORS},
        {"tile_blocks", t->tile_blocks, 1, LBK_TUNING_MAX_TILE_BLOCKS},
        {"slice", t->slice, LBK_TUNING_MIN_SLICE, LBK_TUNING_MAX_SLICE},
        {"segment_log2", t->segment_log2, LBK_TUNING_MIN_SEGMENT_LOG2,
         LBK_TUNING_MAX_SEGMENT_LOG2},
    };
    if (t->lanes != 4 && t->lanes != 8 && t->lanes != 16) {
        snprintf(why, why_size, "lanes = %d: must be 4, 8 or 16", t->lanes);
        return false;
    }
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (checks[i].value < checks[i].lo || checks[i].value > checks[i].hi) {
            snprintf(why, why_size, "%s = %d: must be %d..%d", checks[i].name, checks[i].value,
                     checks[i].lo, checks[i].hi);
            return false;
        }
    }
    return true;
}

const char *lbk_tuning_source_name(lbk_tuning_source source)
{
    switch (source) {
    case LBK_TUNING_DERIVED: return "derived";
    case LBK_TUNING_CACHE: return "tuned";
    case LBK_TUNING_JOB: return "job";
    }
    return "?";
}

void lbk_tuning_format(const lbk_tuning *t, char *buf, size_t size)
{
    snprintf(buf, size, "lanes=%d block=%dx%d tile=%d slice=%d segment=2^%d", t->lanes,
             t->block_queries, t->block_vectors, t->tile_blocks, t->slice, t->segment_log2);
}
