#include "device_tuning.h"

#include "tune_cache.h"

#include <stdio.h>
#include <string.h>

bool lbk_device_tuning_apply_job(const lbk_job *job, lbk_tuning *t)
{
    const int from_job[6] = {job->tuning.lanes,         job->tuning.block_queries,
                             job->tuning.block_vectors, job->tuning.tile_blocks,
                             job->tuning.slice,         job->tuning.segment_log2};
    int *field[6] = {&t->lanes,       &t->block_queries, &t->block_vectors,
                     &t->tile_blocks, &t->slice,         &t->segment_log2};
    bool any = false;
    for (int i = 0; i < 6; i++) {
        if (from_job[i] != 0) {
            *field[i] = from_job[i];
            any = true;
        }
    }
    return any;
}

void lbk_device_tuning_from_job(const lbk_job *job, const lbk_device *dev, const char *cache_dir,
                                lbk_tuning *out, char *file, size_t file_size)
{
    lbk_tuning_derive(dev, out);
    char path[4096];
    if (file && file_size > 0)
        file[0] = '\0';
    if (job->tuning.cache && lbk_tune_cache_path(cache_dir, dev, path, sizeof path)) {
        const char *base = strrchr(path, '/');
        if (file && file_size > 0)
            snprintf(file, file_size, "%s", base ? base + 1 : path);
        lbk_tuning cached;
        if (lbk_tune_cache_read(path, dev, &cached) == LBK_TUNE_CACHE_USED)
            *out = cached;
    }
    if (lbk_device_tuning_apply_job(job, out))
        out->source = LBK_TUNING_JOB;
}
