/* _POSIX_C_SOURCE's fdatasync, sigaction and stat's st_mtim. */
#define _GNU_SOURCE
#include "checkpoint.h"

#include "log.h"
#include "saved.h"
#include "timer.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[] = "lbknn checkpoint 1\n";
static volatile sig_atomic_t stop_asked;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

void lbk_checkpoint_handle_signal(const lbk_job *job)
{
    if (!job->run.checkpoint[0])
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    /* A caller may hand it down blocked (ctest does): it would wait forever. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

lbk_status lbk_checkpoint_supported(const lbk_run_state *s)
{
    const lbk_job *job = s->job;
    const char *why = NULL;
    if (job->task == LBK_TASK_GRAPH)
        why = "task graph (its rows are written at the end)";
    else if (s->plan.owns_slice)
        why = "mpi.partition spatial or replicate (each rank writes its text at the end)";
    else if (s->plan.sliced && s->comm->size > 1)
        why = "mpi.merge: reduce_scatter (each rank writes slices)";
    else if (lbk_dataset_array_layout_of(job->output.neighbors) == LBK_ARRAY_HDF5 ||
             lbk_dataset_array_layout_of(job->output.distances) == LBK_ARRAY_HDF5)
        why = "HDF5 outputs (libhdf5 lays the file out)";
    LBK_FAIL_IF(why, LBK_ERR_CONFIG,
                "%s: run.checkpoint is not supported with %s; use mpi.partition: shard with "
                "mpi.merge: reduce, or no checkpoint",
                job->source, why);
    return LBK_OK;
}

/* ---- the checkpoint's text ------------------------------------------------ */

/* The job as printed, without the run section (a resumed run may change
 * its interval and time limit). */
static char *canonical_job(const lbk_job *job, size_t *len)
{
    lbk_job *copy = malloc(sizeof *copy);
    char *text = NULL;
    if (!copy)
        return NULL;
    *copy = *job;
    lbk_job defaults;
    lbk_job_defaults(&defaults);
    copy->run = defaults.run;
    FILE *f = open_memstream(&text, len);
    if (f) {
        lbk_job_print(copy, f, 0);
        if (fclose(f) != 0) {
            free(text);
            text = NULL;
        }
    }
    free(copy);
    return text;
}

/* The lines a checkpoint of this run must have, whatever its progress:
 * compared line by line, the first that differs names the item. */
static void identity_lines(const lbk_run_state *s, uint32_t job_hash, FILE *f)
{
    const lbk_job *job = s->job;
    const lbk_index_info *info = lbk_index_info_of(s->index);
    fprintf(f, "%s", magic);
    fprintf(f, "job_hash %08" PRIx32 "\n", job_hash);
    fprintf(f, "ranks %d\n", s->comm->size);
    fprintf(f, "partition %d\n", (int)s->plan.partition);
    fprintf(f, "engine %d\n", (int)s->plan.engine);
    fprintf(f, "batch %" PRIu64 "\n", info->batch);
    fprintf(f, "batches %" PRIu64 "\n", info->batches);
    const struct {
        const char *key, *path;
    } inputs[] = {{"reference.path", job->reference.path},
                  {"reference.labels", job->reference.labels},
                  {"reference.targets", job->reference.targets},
                  {"query.path", job->query.path},
                  {"query.labels", job->query.labels},
                  {"query.targets", job->query.targets},
                  {"query.neighbors", job->truth.neighbors},
                  {"query.distances", job->truth.distances}};
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        struct stat sb;
        if (!inputs[i].path[0])
            continue;
        if (stat(inputs[i].path, &sb) != 0)
            memset(&sb, 0, sizeof sb);
        fprintf(f, "input %s %lld %lld.%09ld\n", inputs[i].key, (long long)sb.st_size,
                (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
    }
}

static void hex(FILE *f, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        fprintf(f, "%02x", p[i]);
}

/* Rank 0's scores so far, bit for bit (this binary reads them back). */
static void state_lines(const lbk_run_state *s, FILE *f)
{
    const lbk_classify_confusion *c = &s->confusion;
    fprintf(f, "text_offset %" PRIu64 "\nproba_offset %" PRIu64 "\n", s->outputs.text_offset,
            s->outputs.proba_offset);
    fprintf(f, "counts ");
    const uint64_t counts[4] = {c->total, c->correct, c->correct_top5, c->other};
    hex(f, counts, sizeof counts);
    hex(f, &s->truth, sizeof s->truth);
    hex(f, &s->score, sizeof s->score);
    fprintf(f, "\nmatrix ");
    if (c->matrix)
        hex(f, c->matrix, (size_t)c->classes * (size_t)c->classes * sizeof *c->matrix);
    fprintf(f, "\n");
}

/* The whole checkpoint text, ending in its own CRC. */
static lbk_status render(const lbk_run_state *s, uint64_t done, char **text, size_t *len)
{
    size_t job_len = 0;
    char *job = canonical_job(s->job, &job_len);
    LBK_FAIL_IF(!job, LBK_ERR_NOMEM, "out of host memory writing the checkpoint");
    FILE *f = open_memstream(text, len);
    if (!f) {
        free(job);
        lbk_error("out of host memory writing the checkpoint");
        return LBK_ERR_NOMEM;
    }
    identity_lines(s, lbk_saved_crc32(0, job, job_len), f);
    fprintf(f, "done %" PRIu64 "\n", done);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        if (s->kept_on[i])
            fprintf(f, "output %s %" PRIu64 " %08" PRIx32 "\n", lbk_outputs_key(i),
                    s->kept_len[i], s->kept_crc[i]);
    state_lines(s, f);
    fprintf(f, "job %zu\n%s", job_len, job);
    free(job);
    const int rc = fclose(f);
    LBK_FAIL_IF(rc != 0, LBK_ERR_NOMEM, "out of host memory writing the checkpoint");
    char *grown = realloc(*text, *len + 32);
    LBK_FAIL_IF(!grown, LBK_ERR_NOMEM, "out of host memory writing the checkpoint");
    *text = grown;
    *len += (size_t)snprintf(grown + *len, 32, "end %08" PRIx32 "\n",
                             lbk_saved_crc32(0, grown, *len));
    return LBK_OK;
}

/* ---- writing ------------------------------------------------------------ */

/* Each partial file's CRC, extended over what was written since the last
 * checkpoint (rank 0 writes every file in order, so earlier bytes stay),
 * and its bytes made durable before the checkpoint that names them. */
static lbk_status extend_crcs(lbk_run_state *s)
{
    lbk_outfile *files[LBK_JOB_OUTPUT_COUNT];
    unsigned char buf[1 << 16];
    lbk_outputs_files(&s->outputs, files);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        if (!s->kept_on[i])
            continue;
        const lbk_outfile *f = files[i];
        struct stat sb;
        LBK_FAIL_IF(fstat(f->fd, &sb) != 0 || fdatasync(f->fd) != 0, LBK_ERR_IO,
                    "%s: cannot sync the partial file: %s", f->temp, strerror(errno));
        while (s->kept_len[i] < (uint64_t)sb.st_size) {
            const uint64_t left = (uint64_t)sb.st_size - s->kept_len[i];
            const ssize_t n =
                pread(f->fd, buf, left < sizeof buf ? left : sizeof buf, (off_t)s->kept_len[i]);
            LBK_FAIL_IF(n <= 0, LBK_ERR_IO, "%s: cannot read the partial file back: %s", f->temp,
                        n < 0 ? strerror(errno) : "it ended early");
            s->kept_crc[i] = lbk_saved_crc32(s->kept_crc[i], buf, (size_t)n);
            s->kept_len[i] += (uint64_t)n;
        }
    }
    return LBK_OK;
}

static lbk_status write_all(int fd, const char *path, const char *text, size_t len)
{
    while (len > 0) {
        const ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        LBK_FAIL_IF(n < 0, LBK_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        text += n;
        len -= (size_t)n;
    }
    return LBK_OK;
}

/* PATH.tmp written and synced, PATH kept as PATH.prev, PATH.tmp renamed
 * over PATH. */
static lbk_status write_checkpoint(lbk_run_state *s, uint64_t done)
{
    char *text = NULL;
    size_t len = 0;
    const char *path = s->job->run.checkpoint;
    char tmp[LBK_PATH_MAX + 8], prev[LBK_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(prev, sizeof prev, "%s.prev", path);
    LBK_TRY(extend_crcs(s));
    LBK_TRY(render(s, done, &text, &len));
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    lbk_status st = LBK_OK;
    if (fd < 0) {
        lbk_error("run.checkpoint: cannot create %s: %s", tmp, strerror(errno));
        st = LBK_ERR_IO;
    }
    if (st == LBK_OK)
        st = write_all(fd, tmp, text, len);
    if (st == LBK_OK && fsync(fd) != 0) {
        lbk_error("run.checkpoint: cannot sync %s: %s", tmp, strerror(errno));
        st = LBK_ERR_IO;
    }
    if (fd >= 0)
        close(fd);
    free(text);
    /* A second name for the previous one, so that PATH itself is replaced
     * by one rename: at no moment is there no checkpoint. A PATH that this
     * run found corrupt is not kept: PATH.prev stays the last good one. */
    const bool keep = st == LBK_OK && !s->checkpoint_bad;
    if (keep)
        unlink(prev);
    if (keep && access(path, F_OK) == 0 && link(path, prev) != 0) {
        lbk_error("run.checkpoint: cannot keep %s as %s: %s", path, prev, strerror(errno));
        st = LBK_ERR_IO;
    }
    if (st == LBK_OK && rename(tmp, path) != 0) {
        lbk_error("run.checkpoint: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        st = LBK_ERR_IO;
    }
    if (st == LBK_OK)
        s->checkpoint_bad = false;
    return st;
}

lbk_status lbk_checkpoint_after_batch(void *run_state, uint64_t done)
{
    lbk_run_state *s = run_state;
    const double now = lbk_timer_now();
    /* 2: stop (any rank's SIGUSR1, or rank 0's time limit); 1: rank 0's
     * clock says a checkpoint is due. */
    int32_t want = stop_asked ? 2 : 0;
    if (s->root && now - s->t_start >= s->job->run.max_hours * 3600.0)
        want = 2;
    if (s->root && want == 0 && now - s->t_checkpoint >= (double)s->job->run.checkpoint_s)
        want = 1;
    LBK_TRY(lbk_comm_allreduce_i32(s->comm, &want, LBK_REDUCE_MAX));
    const uint64_t batches = lbk_index_info_of(s->index)->batches;
    if (want == 0 || done == batches)
        return LBK_OK; /* the last batch's results are committed instead */
    LBK_TRY(lbk_comm_agree(s->comm, s->root ? write_checkpoint(s, done) : LBK_OK));
    s->t_checkpoint = lbk_timer_now();
    if (want < 2)
        return LBK_OK;
    if (s->root)
        lbk_info("stopped after batch %" PRIu64 " of %" PRIu64 "; checkpoint %s written; "
                 "continue with lbknn run JOB --resume",
                 done, batches, s->job->run.checkpoint);
    return LBK_STOPPED;
}

void lbk_checkpoint_remove(const lbk_run_state *s)
{
    char name[LBK_PATH_MAX + 8];
    unlink(s->job->run.checkpoint);
    snprintf(name, sizeof name, "%s.prev", s->job->run.checkpoint);
    unlink(name);
    snprintf(name, sizeof name, "%s.tmp", s->job->run.checkpoint);
    unlink(name);
}

/* ---- resuming ----------------------------------------------------------- */

static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    if (!f)
        return NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 4096 + 1 > cap) {
            cap = cap * 2 + 8192;
            char *grown = realloc(text, cap);
            if (!grown)
                break;
            text = grown;
        }
        const size_t n = fread(text + *len, 1, cap - *len - 1, f);
        *len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    if (text)
        text[*len] = '\0';
    return text;
}

/* The partial file's first len bytes have this CRC (one line if not). */
static lbk_status verify_partial(const char *ckpt, const char *key, const char *name,
                                 uint64_t len, uint32_t crc)
{
    struct stat sb;
    unsigned char buf[1 << 16];
    LBK_FAIL_IF(stat(name, &sb) != 0, LBK_ERR_INPUT,
                "%s: --resume refused: %s's partial file %s is missing", ckpt, key, name);
    LBK_FAIL_IF((uint64_t)sb.st_size < len, LBK_ERR_INPUT,
                "%s: --resume refused: %s's partial file %s has %lld bytes, fewer than the "
                "checkpointed %" PRIu64,
                ckpt, key, name, (long long)sb.st_size, len);
    const int fd = open(name, O_RDONLY | O_CLOEXEC);
    LBK_FAIL_IF(fd < 0, LBK_ERR_IO, "%s: cannot open %s: %s", ckpt, name, strerror(errno));
    uint32_t c = 0;
    for (uint64_t at = 0; at < len;) {
        const uint64_t left = len - at;
        const ssize_t n = pread(fd, buf, left < sizeof buf ? left : sizeof buf, (off_t)at);
        if (n <= 0)
            break;
        c = lbk_saved_crc32(c, buf, (size_t)n);
        at += (uint64_t)n;
    }
    close(fd);
    LBK_FAIL_IF(c != crc, LBK_ERR_INPUT,
                "%s: --resume refused: %s's partial file %s differs from the checkpointed one "
                "in its first %" PRIu64 " bytes (CRC-32 %08" PRIx32 ", checkpoint %08" PRIx32 ")",
                ckpt, key, name, len, c, crc);
    return LBK_OK;
}

static bool unhex(const char *text, size_t chars, void *out, size_t len)
{
    unsigned char *p = out;
    if (chars < 2 * len)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        if (sscanf(text + 2 * i, "%2x", &v) != 1)
            return false;
        p[i] = (unsigned char)v;
    }
    return true;
}

/* The line at *at (advanced past it), without its newline. */
static const char *next_line(const char **at, size_t *len)
{
    const char *line = *at, *nl = strchr(line, '\n');
    *len = nl ? (size_t)(nl - line) : strlen(line);
    *at = nl ? nl + 1 : line + *len;
    return line;
}

/* The item named by the first differing identity line, in one line. */
static lbk_status compare_identity(const lbk_run_state *s, const char *ckpt, const char **at)
{
    size_t job_len = 0, len = 0;
    char *job = canonical_job(s->job, &job_len), *mine = NULL;
    LBK_FAIL_IF(!job, LBK_ERR_NOMEM, "out of host memory reading the checkpoint");
    FILE *f = open_memstream(&mine, &len);
    if (f) {
        identity_lines(s, lbk_saved_crc32(0, job, job_len), f);
        fclose(f);
    }
    free(job);
    LBK_FAIL_IF(!f || !mine, LBK_ERR_NOMEM, "out of host memory reading the checkpoint");
    const char *my = mine;
    lbk_status st = LBK_OK;
    while (*my && st == LBK_OK) {
        size_t a_len, b_len;
        const char *a = next_line(&my, &a_len), *b = next_line(at, &b_len);
        if (a_len == b_len && memcmp(a, b, a_len) == 0)
            continue;
        /* "input KEY ...": the item is the input's key. */
        const bool input = strncmp(a, "input ", 6) == 0;
        const char *item = input ? a + 6 : a;
        const int item_len = (int)strcspn(item, " \n");
        lbk_error("%s: --resume refused: %s%.*s differs: the checkpoint has \"%.*s\", this run "
                  "\"%.*s\"",
                  ckpt, input ? "input " : "", item_len, item, (int)b_len, b, (int)a_len, a);
        st = LBK_ERR_INPUT;
    }
    free(mine);
    return st;
}

/* Any partial file of this job's outputs, named into `name`. */
static bool any_partial(const lbk_run_state *s, char *name, size_t size)
{
    const char *const paths[] = {
#define OUTPUT_PATH_(n) s->job->output.n,
        LBK_JOB_OUTPUT_LIST(OUTPUT_PATH_)
#undef OUTPUT_PATH_
    };
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        if (!s->kept_on[i])
            continue;
        lbk_outfile_kept_name(paths[i], name, size);
        if (access(name, F_OK) == 0)
            return true;
    }
    return false;
}

/* done, outputs, offsets and scores: the checkpoint past its identity. */
static lbk_status parse_progress(lbk_run_state *s, const char *ckpt, const char *at,
                                 uint64_t keep[LBK_JOB_OUTPUT_COUNT])
{
    const char *const paths[] = {
#define OUTPUT_PATH_(n) s->job->output.n,
        LBK_JOB_OUTPUT_LIST(OUTPUT_PATH_)
#undef OUTPUT_PATH_
    };
    size_t len;
    const char *line = next_line(&at, &len);
    LBK_FAIL_IF(sscanf(line, "done %" SCNu64, &s->done_batches) != 1, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint has no batch count", ckpt);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        if (!s->kept_on[i])
            continue;
        char key[64], name[LBK_PATH_MAX + 32];
        line = next_line(&at, &len);
        LBK_FAIL_IF(sscanf(line, "output %63s %" SCNu64 " %" SCNx32, key, &s->kept_len[i],
                           &s->kept_crc[i]) != 3 ||
                        strcmp(key, lbk_outputs_key(i)) != 0,
                    LBK_ERR_INPUT, "%s: --resume refused: the checkpoint names no partial %s",
                    ckpt, lbk_outputs_key(i));
        lbk_outfile_kept_name(paths[i], name, sizeof name);
        LBK_TRY(verify_partial(ckpt, key, name, s->kept_len[i], s->kept_crc[i]));
        keep[i] = s->kept_len[i];
    }
    uint64_t counts[4];
    lbk_classify_confusion *c = &s->confusion;
    const size_t matrix = c->matrix ? (size_t)c->classes * (size_t)c->classes * 8 : 0;
    const size_t state = sizeof counts + sizeof s->truth + sizeof s->score;
    const char *counts_line, *matrix_line;
    size_t counts_len, matrix_len;
    bool ok = sscanf(next_line(&at, &len), "text_offset %" SCNu64, &s->outputs.text_offset) == 1;
    ok = ok &&
         sscanf(next_line(&at, &len), "proba_offset %" SCNu64, &s->outputs.proba_offset) == 1;
    counts_line = next_line(&at, &counts_len);
    matrix_line = next_line(&at, &matrix_len);
    ok = ok && counts_len == 7 + 2 * state &&
         unhex(counts_line + 7, counts_len - 7, counts, sizeof counts);
    ok = ok && unhex(counts_line + 7 + 2 * sizeof counts, 2 * sizeof s->truth, &s->truth,
                     sizeof s->truth);
    ok = ok && unhex(counts_line + 7 + 2 * (sizeof counts + sizeof s->truth), 2 * sizeof s->score,
                     &s->score, sizeof s->score);
    ok = ok && matrix_len == 7 + 2 * matrix &&
         (!matrix || unhex(matrix_line + 7, matrix_len - 7, c->matrix, matrix));
    LBK_FAIL_IF(!ok, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint's scores are unreadable", ckpt);
    c->total = counts[0];
    c->correct = counts[1];
    c->correct_top5 = counts[2];
    c->other = counts[3];
    return LBK_OK;
}

/* The checkpoint's own CRC, over everything before its last line. */
static bool intact(const char *text, size_t len)
{
    uint32_t crc;
    if (len < 13 || text[len - 1] != '\n')
        return false;
    const char *end = text + len - 13; /* "end XXXXXXXX\n" */
    return strncmp(end, "end ", 4) == 0 && sscanf(end + 4, "%8" SCNx32, &crc) == 1 &&
           crc == lbk_saved_crc32(0, text, (size_t)(end - text));
}

/* Whether the file at path is a whole checkpoint (read into *text); if not,
 * why not, into why. */
static bool read_checked(const char *path, char **text, size_t *len, char *why, size_t size)
{
    *text = read_whole(path, len);
    const int err = errno;
    if (*text && intact(*text, *len))
        return true;
    if (*text)
        snprintf(why, size, "is corrupted (its CRC-32 does not match)");
    else
        snprintf(why, size, "cannot be read (%s)", strerror(err));
    free(*text);
    *text = NULL;
    return false;
}

/* PATH, or PATH.prev when PATH exists but fails its own CRC (a truncated
 * or damaged file): only then, never when PATH is a whole checkpoint that
 * does not match (another job's, other inputs), which is refused as such.
 * PATH.prev never names more bytes than PATH, so it matches the partial
 * files whenever PATH would have. s->checkpoint_bad says which was read. */
static lbk_status read_intact(lbk_run_state *s, const char *ckpt, const char *prev, char **text,
                              size_t *len)
{
    char why[160], prev_why[160];
    if (read_checked(ckpt, text, len, why, sizeof why))
        return LBK_OK;
    struct stat sb;
    LBK_FAIL_IF(stat(prev, &sb) != 0, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint %s, and there is no %s to fall back on",
                ckpt, why, prev);
    LBK_FAIL_IF(!read_checked(prev, text, len, prev_why, sizeof prev_why), LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint %s and the previous one, %s, %s", ckpt, why,
                prev, prev_why);
    lbk_warn("%s: the checkpoint %s; resuming from the previous one, %s", ckpt, why, prev);
    s->checkpoint_bad = true;
    return LBK_OK;
}

lbk_status lbk_checkpoint_restore(lbk_run_state *s, bool resume,
                                  uint64_t keep[LBK_JOB_OUTPUT_COUNT])
{
    const char *ckpt = s->job->run.checkpoint;
    char name[LBK_PATH_MAX + 32];
    memset(keep, 0, LBK_JOB_OUTPUT_COUNT * sizeof *keep);
    s->t_checkpoint = lbk_timer_now();
    if (!resume) {
        /* A fresh run: an earlier run's checkpoint no longer describes the
         * partial files it is about to cut. */
        lbk_checkpoint_remove(s);
        return LBK_OK;
    }
    struct stat sb;
    if (stat(ckpt, &sb) != 0 && errno == ENOENT) {
        LBK_FAIL_IF(any_partial(s, name, sizeof name), LBK_ERR_INPUT,
                    "%s: --resume refused: the partial file %s exists but no checkpoint does",
                    ckpt, name);
        lbk_info("%s: no checkpoint and no partial files: starting from the first batch", ckpt);
        return LBK_OK;
    }
    char prev[LBK_PATH_MAX + 8], *text = NULL;
    size_t len = 0;
    snprintf(prev, sizeof prev, "%s.prev", ckpt);
    LBK_TRY(read_intact(s, ckpt, prev, &text, &len));
    const char *from = s->checkpoint_bad ? prev : ckpt;
    const char *at = text;
    lbk_status st = compare_identity(s, from, &at);
    if (st == LBK_OK)
        st = parse_progress(s, from, at, keep);
    free(text);
    if (st == LBK_OK)
        lbk_info("%s: resuming after batch %" PRIu64, from, s->done_batches);
    return st;
}
