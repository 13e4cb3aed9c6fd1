/* The library's options are the keys it reads (lbk_index_params_option_keys,
 * the list lbknn_options_set takes): every other key of the job, changed,
 * leaves what the three readers make of the options unchanged, and every
 * listed key changes it. So the list can neither miss a key that a reader
 * starts to read nor keep one that no reader reads any more. */
#include "device_request.h"
#include "device_tuning.h"
#include "index_params.h"
#include "job.h"
#include "job_schema.h"
#include "lbk_test.h"

#include <stdio.h>
#include <string.h>

/* What the library's three readers make of a job. */
typedef struct {
    lbk_index_params index;
    lbk_device_request request;
    int list[LBK_JOB_MAX_DEVICE_LIST]; /* request.list's entries (the pointer is the job's) */
    lbk_tuning tuning;
    bool tuning_set;
} reading;

static void read_job(const lbk_job *job, reading *r)
{
    memset(r, 0, sizeof *r);
    lbk_index_params_from_job(job, &r->index);
    r->request = lbk_device_request_from_job(job, 0);
    for (int i = 0; i < r->request.list_len; i++)
        r->list[i] = r->request.list[i];
    r->request.list = NULL;
    r->tuning_set = lbk_device_tuning_apply_job(job, &r->tuning);
}

static bool same_reading(const reading *a, const reading *b)
{
    return memcmp(&a->index, &b->index, sizeof a->index) == 0 &&
           memcmp(&a->request, &b->request, sizeof a->request) == 0 &&
           memcmp(a->list, b->list, sizeof a->list) == 0 &&
           memcmp(&a->tuning, &b->tuning, sizeof a->tuning) == 0 &&
           a->tuning_set == b->tuning_set;
}

/* Another value in the key's field (its range does not matter: the readers
 * copy, they do not check). */
static void change(lbk_job *job, const lbk_job_key_desc *d)
{
    void *field = lbk_job_key_field(job, d);
    switch (d->kind) {
    case LBK_KEY_INT:
    case LBK_KEY_ENUM:
    case LBK_KEY_HEADER: *(int *)field += 1; break;
    case LBK_KEY_U64: *(uint64_t *)field += 1; break;
    case LBK_KEY_DOUBLE:
    case LBK_KEY_REAL: *(double *)field += 1; break;
    case LBK_KEY_BOOL: *(bool *)field = !*(bool *)field; break;
    case LBK_KEY_CHAR: *(char *)field ^= 1; break;
    case LBK_KEY_IN_PATH:
    case LBK_KEY_OUT_PATH:
    case LBK_KEY_NAME: memcpy(field, "changed", sizeof "changed"); break;
    case LBK_KEY_DEV_LIST:
        job->device.list[0] = 3;
        job->device.list_len = 1;
        break;
    }
}

static bool option_key(const char *name)
{
    for (const char *const *k = lbk_index_params_option_keys; *k; k++)
        if (strcmp(*k, name) == 0)
            return true;
    return false;
}

static void test_readers_read_the_listed_keys(void)
{
    lbk_job defaults;
    lbk_job_defaults(&defaults);
    reading base;
    read_job(&defaults, &base);
    int listed = 0;
    for (int i = 0; i < lbk_job_key_count; i++) {
        const lbk_job_key_desc *d = &lbk_job_keys[i];
        char name[96];
        lbk_job_key_name(d, name, sizeof name);
        lbk_job job = defaults;
        change(&job, d);
        reading r;
        read_job(&job, &r);
        const bool taken = option_key(name);
        listed += taken;
        /* task: read for `lbknn run`'s graph (K + 1), which the library's
         * options never ask; reference.type: read only where it names a compact
         * type (another value may read as its default, auto); tuning.cache: read only where a cache file is
         * (tests/tuning: precedence, library_cache). */
        if (strcmp(name, "task") == 0 || strcmp(name, "reference.type") == 0 ||
            strcmp(name, "tuning.cache") == 0)
            continue;
        if (taken)
            LBK_EXPECT_TRUE(!same_reading(&base, &r), "%s is listed, but no reader reads it",
                            name);
        else
            LBK_EXPECT_TRUE(same_reading(&base, &r),
                            "%s changes what the library reads, but is not listed", name);
    }
    int count = 0;
    for (const char *const *k = lbk_index_params_option_keys; *k; k++)
        count++;
    LBK_EXPECT_EQ_INT(listed, count, "a listed key that is no key of the job");
}

/* The message names whole sections once, as section.*. */
static void test_message(void)
{
    char keys[512];
    lbk_job_join_names(lbk_index_params_option_keys, keys, sizeof keys);
    LBK_EXPECT_EQ_STR(keys, "knn.k, knn.metric, knn.engine, device.*, tree.*, tuning.*, "
                            "mpi.partition, mpi.merge, reference.type");
    static const char *const some[] = {"mpi.merge",  "task",        "tree.sort",
                                       "tree.split", "tree.verify", NULL};
    lbk_job_join_names(some, keys, sizeof keys);
    LBK_EXPECT_EQ_STR(keys, "mpi.merge, task, tree.*");
    char small[12];
    lbk_job_join_names(lbk_index_params_option_keys, small, sizeof small);
    LBK_EXPECT_EQ_STR(small, "knn.k, knn.");
}

static const lbk_test_case cases[] = {
    {"readers", test_readers_read_the_listed_keys},
    {"message", test_message},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
