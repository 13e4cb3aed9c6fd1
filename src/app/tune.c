#include "tune.h"

#include "log.h"
#include "try.h"
#include "tune_cache.h"
#include "usage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lbk_tune_use_cache_dir(lbk_device *dev, const char *cache_dir)
{
    char dir[4096];
    const int n = snprintf(dir, sizeof dir, "%s/programs", cache_dir ? cache_dir : "");
    if (cache_dir && cache_dir[0] && n > 0 && (size_t)n < sizeof dir)
        lbk_device_set_program_cache(dev, dir);
}

static lbk_status parse_tune_args(int argc, char **argv, lbk_device_request *req, int *index)
{
    *req = (lbk_device_request){.type = LBK_DEVICE_ANY};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc && (strcmp(opt, "--type") == 0 || strcmp(opt, "--device") == 0))
            return lbk_usage_error("%s needs a value", opt);
        if (strcmp(opt, "--type") == 0) {
            lbk_device_type type;
            if (!lbk_device_type_parse(argv[++i], &type))
                return lbk_usage_error("--type %s: expected gpu, cpu or any", argv[i]);
            req->type = type;
        } else if (strcmp(opt, "--device") == 0) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 1000)
                return lbk_usage_error("--device %s: expected a device index", argv[i]);
            *index = (int)v;
        } else {
            return lbk_usage_error("unknown argument '%s' for tune", opt);
        }
    }
    req->list = index;
    req->list_len = 1;
    return LBK_OK;
}

lbk_status lbk_tune_command(int argc, char **argv, const char *cache_dir)
{
    lbk_device_request req;
    int index = 0;
    LBK_TRY(parse_tune_args(argc, argv, &req, &index));
    char path[4096];
    lbk_device *dev = NULL;
    LBK_TRY(lbk_device_open(&req, &dev));
    lbk_tune_use_cache_dir(dev, cache_dir);
    lbk_status st = LBK_OK;
    if (!lbk_tune_cache_path(cache_dir, dev, path, sizeof path)) {
        lbk_error("no directory for the tuning cache: set XDG_CACHE_HOME or HOME");
        st = LBK_ERR_USAGE;
        goto cleanup;
    }
    printf("lbknn %s tune: %s\n", LBK_VERSION, lbk_device_description(dev));
    lbk_tuning derived, best;
    lbk_tuning_derive(dev, &derived);
    LBK_TRY_GOTO(st, lbk_tuning_measure(dev, stdout, &best));
    char a[128], b[128], comment[512];
    lbk_tuning_format(&derived, a, sizeof a);
    lbk_tuning_format(&best, b, sizeof b);
    snprintf(comment, sizeof comment, "measured on %s\nderived from the device: %s",
             lbk_device_description(dev), a);
    LBK_TRY_GOTO(st, lbk_tune_cache_write(path, dev, &best, comment));
    char shown[4096];
    printf("derived  %s\ntuned    %s\nwritten  %s\n", a, b,
           lbk_log_shown(path, shown, sizeof shown));
cleanup:
    lbk_device_close(dev);
    return st;
}
