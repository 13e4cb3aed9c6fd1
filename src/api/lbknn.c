/* The library's handles: options (a job, set key by key), the context (a
 * communicator and a device), messages. The index and its searches:
 * lbknn_index.c; the statuses: lbknn_status.c. */
#include "lbknn_impl.h"

#include "build_info.h"
#include "cpu_threads.h"
#include "dataset.h"
#include "device_request.h"
#include "index_params.h"
#include "log.h"
#include "try.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lbknn_set_log_callback's, for the calls whose context has none of its
 * own: set and read from any thread, so under a lock (the pair must be read
 * whole). The other process-wide state and its guards: docs/design.md,
 * section 11, "Threads". */
static pthread_mutex_t process_log_lock = PTHREAD_MUTEX_INITIALIZER;
static lbknn_log_fn process_log_fn = NULL;
static void *process_log_user = NULL;

/* The thread's sink during an entry point: `user` is its lbk_api_call. */
static void api_log(void *user, int level, const char *message)
{
    const lbk_api_call *call = user;
    if (level == 0 && call->message && call->message[0] == '\0')
        snprintf(call->message, LBKNN_MESSAGE_MAX, "%s", message);
    if (call->fn && level <= (int)call->level)
        call->fn(call->user, (lbknn_log_level)level, message);
}

void lbknn_set_log_callback(lbknn_log_fn fn, void *user)
{
    pthread_mutex_lock(&process_log_lock);
    process_log_fn = fn;
    process_log_user = user;
    pthread_mutex_unlock(&process_log_lock);
}

void lbk_api_begin(lbk_api_call *call, const lbknn_context *context, char *message)
{
    call->message = message;
    if (message)
        message[0] = '\0';
    call->level = context ? context->log_level : LBKNN_LOG_INFO;
    if (context && context->log_fn) {
        call->fn = context->log_fn;
        call->user = context->log_user;
    } else {
        pthread_mutex_lock(&process_log_lock);
        call->fn = process_log_fn;
        call->user = process_log_user;
        pthread_mutex_unlock(&process_log_lock);
    }
    call->saved = lbk_log_get();
    const lbk_log log = {.sink = api_log, .user = call, .rank = -1, .quiet = false};
    lbk_log_set(&log);
    if (context && context->comm_ok)
        lbk_log_set_rank(context->comm.rank, context->comm.size);
}

lbknn_status lbk_api_end(lbk_api_call *call, lbk_status st)
{
    const lbknn_status code = lbk_api_status(st);
    /* A rank that did not fail logs nothing: the failing one said why. */
    if (code != LBKNN_OK && call->message && call->message[0] == '\0')
        snprintf(call->message, LBKNN_MESSAGE_MAX, "%s",
                 lbk_status_is_remote(st) ? "another rank failed (its message says why)"
                                          : lbknn_status_string(code));
    lbk_log_set(&call->saved);
    return code;
}

const char *lbknn_version(void) { return LBK_VERSION; }

static char build_info_text[2048];

/* Once per process (pthread_once): two threads' first calls must not both
 * write the text while one of them returns it. */
static void fill_build_info(void)
{
    char *text = build_info_text;
    const size_t size = sizeof build_info_text;
    lbk_build_info_runtime rt;
    lbk_device_runtime_versions(rt.opencl, sizeof rt.opencl);
    lbk_comm_library_version(rt.mpi, sizeof rt.mpi);
    lbk_hdf5_version(rt.hdf5, sizeof rt.hdf5);
    lbk_build_info_field fields[LBK_BUILD_INFO_FIELDS];
    lbk_build_info_fields(&rt, fields);
    size_t used = 0;
    for (int i = 0; i < LBK_BUILD_INFO_FIELDS && used < size; i++) {
        const int n =
            snprintf(text + used, size - used, "%s: %s\n", fields[i].name, fields[i].value);
        used = n < 0 ? size : used + (size_t)n;
    }
}

const char *lbknn_build_info(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_build_info);
    return build_info_text;
}

lbknn_status lbknn_options_create(lbknn_options **out)
{
    if (!out)
        return LBKNN_ERR_USAGE;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return LBKNN_ERR_NOMEM;
    lbk_job_defaults(&(*out)->job);
    snprintf((*out)->job.source, sizeof(*out)->job.source, "%s", "<library options>");
    return LBKNN_OK;
}

lbknn_status lbknn_options_set(lbknn_options *o, const char *key, const char *value)
{
    if (!o)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, NULL, o->error);
    lbk_status st = LBK_OK;
    char assignment[LBK_PATH_MAX + 160];
    if (!key || !value) {
        lbk_error("lbknn_options_set: key and value must not be NULL");
        st = LBK_ERR_USAGE;
    } else if (snprintf(assignment, sizeof assignment, "%s=%s", key, value) >=
               (int)sizeof assignment) {
        lbk_error("option %.64s: value too long", key);
        st = LBK_ERR_CONFIG;
    } else {
        st = lbk_index_params_check_option(key);
        if (st == LBK_OK)
            st = lbk_job_set_option(&o->job, assignment);
    }
    return lbk_api_end(&call, st);
}

const char *lbknn_options_error(const lbknn_options *o) { return o ? o->error : ""; }

void lbknn_options_destroy(lbknn_options *o) { free(o); }

static lbk_status open_device(lbknn_context *c)
{
    const lbk_job *job = &c->options;
    (void)lbk_cpu_threads_apply(&c->comm); /* before the device: as `lbknn run` */
    const lbk_device_request request = lbk_device_request_from_job(job, c->comm.local_rank);
    LBK_TRY(lbk_device_open(&request, &c->device));
    lbk_device_label(c->device, c->comm.local_rank, c->device_desc, sizeof c->device_desc);
    return LBK_OK;
}

lbknn_status lbknn_context_create(const lbknn_options *options, const void *mpi_comm,
                                  lbknn_context **out, char *error, size_t error_size)
{
    /* No context yet: its messages go to the process's callback. */
    char message[LBKNN_MESSAGE_MAX];
    lbk_api_call call;
    lbk_api_begin(&call, NULL, message);
    lbk_status st = LBK_OK;
    lbknn_context *c = NULL;
    if (!out) {
        lbk_error("lbknn_context_create: out must not be NULL");
        st = LBK_ERR_USAGE;
        goto cleanup;
    }
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (!c) {
        lbk_error("out of host memory for a context");
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    if (options)
        c->options = options->job;
    else
        lbk_job_defaults(&c->options);
    c->log_level = LBKNN_LOG_INFO;
    LBK_TRY_GOTO(st, lbk_comm_init_from(&c->comm, mpi_comm));
    c->comm_ok = true;
    LBK_TRY_GOTO(st, lbk_comm_agree(&c->comm, open_device(c)));
    *out = c;
    c = NULL;
cleanup:
    lbknn_context_destroy(c);
    const lbknn_status code = lbk_api_end(&call, st);
    if (code != LBKNN_OK && error && error_size > 0)
        snprintf(error, error_size, "%s", message);
    return code;
}

lbknn_status lbknn_context_set_program_cache(lbknn_context *c, const char *dir)
{
    if (!c)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, c, c->error);
    lbk_status st = LBK_OK;
    if (dir && strlen(dir) >= LBK_PATH_MAX) {
        lbk_error("program cache directory: longer than %d bytes", LBK_PATH_MAX - 1);
        st = LBK_ERR_USAGE;
    } else {
        lbk_device_set_program_cache(c->device, dir);
    }
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_context_set_log_callback(lbknn_context *c, lbknn_log_fn fn, void *user,
                                            lbknn_log_level level)
{
    if (!c)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, c, c->error);
    lbk_status st = LBK_OK;
    if (level != LBKNN_LOG_ERROR && level != LBKNN_LOG_WARNING && level != LBKNN_LOG_INFO) {
        lbk_error("lbknn_context_set_log_callback: level = %d: expected LBKNN_LOG_ERROR, "
                  "LBKNN_LOG_WARNING or LBKNN_LOG_INFO",
                  (int)level);
        st = LBK_ERR_USAGE;
    } else {
        c->log_fn = fn;
        c->log_user = user;
        c->log_level = level;
    }
    return lbk_api_end(&call, st);
}

int lbknn_context_rank(const lbknn_context *c) { return c ? c->comm.rank : -1; }
int lbknn_context_size(const lbknn_context *c) { return c ? c->comm.size : 0; }
const char *lbknn_context_device(const lbknn_context *c) { return c ? c->device_desc : ""; }
const char *lbknn_context_error(const lbknn_context *c) { return c ? c->error : ""; }

void lbknn_context_destroy(lbknn_context *c)
{
    if (!c)
        return;
    /* Nothing here logs today; should a release fail one day, its message
     * goes where the context's go, not to stderr. */
    lbk_api_call call;
    lbk_api_begin(&call, c, NULL);
    lbk_device_close(c->device);
    if (c->comm_ok)
        lbk_comm_free(&c->comm);
    (void)lbk_api_end(&call, LBK_OK);
    free(c);
}
