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

static const char magic[] = "lbknn checkpoint 2\n";
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
    else if (lbk_dataset_array_layout_of(job->output.neighbors) == LBK_ARRAY_HDF5 ||
             lbk_dataset_array_layout_of(job->output.distances) == LBK_ARRAY_HDF5)
        why = "HDF5 outputs (libhdf5 lays the file out)";
    LBK_FAIL_IF(why, LBK_ERR_CONFIG,
                "%s: run.checkpoint is not supported with %s; run without it", job->source, why);
    return LBK_OK;
}

/* ---- the parts ------------------------------------------------------------ */

static const char *const held_keys[LBK_RUN_HELD_COUNT] = {"held.predictions",
                                                          "held.probabilities"};

/* Part i's key in the checkpoint's "part" lines. */
static const char *part_key(int i)
{
    return i < LBK_JOB_OUTPUT_COUNT ? lbk_outputs_key(i) : held_keys[i - LBK_JOB_OUTPUT_COUNT];
}

static const char *output_path(const lbk_job *job, int i)
{
    const char *const paths[] = {
#define OUTPUT_PATH_(n) job->output.n,
        LBK_JOB_OUTPUT_LIST(OUTPUT_PATH_)
#undef OUTPUT_PATH_
    };
    return paths[i];
}

static lbk_outputs_shape shape_of(const lbk_run_state *s)
{
    const lbk_outputs_shape shape = {s->shape.query_rows, s->classes, s->shape.reference_rows};
    return shape;
}

/* Part i's file on this rank: the output's partial file, or a held part's
 * file of this rank's own, OUT.lbknn-partial.rank-R. */
static void part_name(const lbk_run_state *s, int i, char *buf, size_t size)
{
    if (i < LBK_JOB_OUTPUT_COUNT) {
        lbk_outfile_kept_name(output_path(s->job, i), buf, size);
        return;
    }
    const bool pred = i - LBK_JOB_OUTPUT_COUNT == LBK_RUN_HELD_PREDICTIONS;
    char stem[LBK_PATH_MAX + 32];
    lbk_outfile_kept_name(pred ? s->job->output.predictions : s->job->output.probabilities, stem,
                          sizeof stem);
    snprintf(buf, size, "%s.rank-%d", stem, s->comm->rank);
}

static bool is_output(int i, const char *key)
{
    return i < LBK_JOB_OUTPUT_COUNT && strcmp(lbk_outputs_key(i), key) == 0;
}

/* Which parts this rank has. Where rank 0 holds every list, or every rank
 * writes its slice of each batch, every file grows in order as a whole:
 * rank 0 reads it back. Where ranks own slices, each has its rows of the
 * arrays, and holds its text until the end: in held files. */
static void plan_parts(lbk_run_state *s)
{
    const lbk_outputs_shape shape = shape_of(s);
    const bool owns = s->plan.owns_slice;
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        uint64_t at, len;
        const bool on = output_path(s->job, i)[0] != '\0' && !is_output(i, "output.report");
        s->kept_on[i] =
            on && (owns ? lbk_outputs_rows_span(s->job, &shape, i, 0, 0, &at, &len) : s->root);
    }
    s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS] =
        owns && s->job->output.predictions[0] != '\0';
    s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PROBABILITIES] = owns && s->proba_rows;
}

/* Rows of this rank's owned slice done after `done` batches. */
static uint64_t rows_done(const lbk_run_state *s, uint64_t done)
{
    const uint64_t rows = done * lbk_index_info_of(s->index)->batch;
    return rows < s->queries.rows ? rows : s->queries.rows;
}

/* Where part i starts in its file, and how long it is after `done` batches
 * (fd: its descriptor, whose size a whole file's length is). */
static lbk_status part_extent(const lbk_run_state *s, int i, uint64_t done, int fd,
                              uint64_t *start, uint64_t *len)
{
    const lbk_outputs_shape shape = shape_of(s);
    *start = 0;
    if (i >= LBK_JOB_OUTPUT_COUNT) {
        *len = s->held_written[i - LBK_JOB_OUTPUT_COUNT];
        return LBK_OK;
    }
    if (s->plan.owns_slice &&
        lbk_outputs_rows_span(s->job, &shape, i, s->query_first, rows_done(s, done), start, len))
        return LBK_OK;
    struct stat sb;
    LBK_FAIL_IF(fd < 0 || fstat(fd, &sb) != 0, LBK_ERR_IO, "%s: cannot stat the partial file: %s",
                output_path(s->job, i), strerror(errno));
    *len = (uint64_t)sb.st_size;
    return LBK_OK;
}

static int part_fd(lbk_run_state *s, int i)
{
    lbk_outfile *files[LBK_JOB_OUTPUT_COUNT];
    if (i >= LBK_JOB_OUTPUT_COUNT)
        return s->held_fd[i - LBK_JOB_OUTPUT_COUNT];
    lbk_outputs_files(&s->outputs, files);
    return files[i]->kept ? files[i]->fd : -1;
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

/* ---- what every rank sends rank 0 ---------------------------------------- */

/* A rank's parts and its scores so far, bit for bit (this binary reads
 * them back): confusion counts, ground-truth counts, regression score, the
 * confusion matrix. */
typedef struct {
    uint64_t len[LBK_RUN_PARTS];
    uint32_t crc[LBK_RUN_PARTS];
    uint8_t on[LBK_RUN_PARTS];
} part_table;

static size_t matrix_bytes(const lbk_run_state *s)
{
    const lbk_classify_confusion *c = &s->confusion;
    return c->matrix ? (size_t)c->classes * (size_t)c->classes * sizeof *c->matrix : 0;
}

static size_t state_bytes(const lbk_run_state *s)
{
    return 4 * sizeof(uint64_t) + sizeof s->truth + sizeof s->score + matrix_bytes(s);
}

static void pack_state(const lbk_run_state *s, unsigned char *p)
{
    const lbk_classify_confusion *c = &s->confusion;
    const uint64_t counts[4] = {c->total, c->correct, c->correct_top5, c->other};
    memcpy(p, counts, sizeof counts);
    p += sizeof counts;
    memcpy(p, &s->truth, sizeof s->truth);
    p += sizeof s->truth;
    memcpy(p, &s->score, sizeof s->score);
    p += sizeof s->score;
    if (c->matrix)
        memcpy(p, c->matrix, matrix_bytes(s));
}

static void unpack_state(lbk_run_state *s, const unsigned char *p)
{
    lbk_classify_confusion *c = &s->confusion;
    uint64_t counts[4];
    memcpy(counts, p, sizeof counts);
    p += sizeof counts;
    c->total = counts[0];
    c->correct = counts[1];
    c->correct_top5 = counts[2];
    c->other = counts[3];
    memcpy(&s->truth, p, sizeof s->truth);
    p += sizeof s->truth;
    memcpy(&s->score, p, sizeof s->score);
    p += sizeof s->score;
    if (c->matrix)
        memcpy(c->matrix, p, matrix_bytes(s));
}

static size_t rank_bytes(const lbk_run_state *s) { return sizeof(part_table) + state_bytes(s); }

static void pack_rank(const lbk_run_state *s, unsigned char *p)
{
    part_table t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < LBK_RUN_PARTS; i++) {
        t.on[i] = s->kept_on[i];
        t.len[i] = s->kept_len[i];
        t.crc[i] = s->kept_crc[i];
    }
    memcpy(p, &t, sizeof t);
    pack_state(s, p + sizeof t);
}

/* Every rank's parts ("part RANK KEY LENGTH CRC") and scores ("state RANK
 * HEX"), from `all` (rank_bytes each, in rank order). */
static void rank_lines(const lbk_run_state *s, const unsigned char *all, FILE *f)
{
    const size_t one = rank_bytes(s);
    for (int r = 0; r < s->comm->size; r++) {
        part_table t;
        memcpy(&t, all + (size_t)r * one, sizeof t);
        for (int i = 0; i < LBK_RUN_PARTS; i++)
            if (t.on[i])
                fprintf(f, "part %d %s %" PRIu64 " %08" PRIx32 "\n", r, part_key(i), t.len[i],
                        t.crc[i]);
    }
    fprintf(f, "text_offset %" PRIu64 "\nproba_offset %" PRIu64 "\n", s->outputs.text_offset,
            s->outputs.proba_offset);
    for (int r = 0; r < s->comm->size; r++) {
        fprintf(f, "state %d ", r);
        hex(f, all + (size_t)r * one + sizeof(part_table), state_bytes(s));
        fprintf(f, "\n");
    }
}

/* The whole checkpoint text, ending in its own CRC. */
static lbk_status render(const lbk_run_state *s, uint64_t done, const unsigned char *all,
                         char **text, size_t *len)
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
    rank_lines(s, all, f);
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

/* Every rank: its bytes of every partial file durable, before rank 0 reads
 * them back and before the checkpoint that names them. */
static lbk_status sync_files(lbk_run_state *s)
{
    lbk_outfile *files[LBK_JOB_OUTPUT_COUNT];
    lbk_outputs_files(&s->outputs, files);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        LBK_FAIL_IF(files[i]->kept && files[i]->fd >= 0 && fdatasync(files[i]->fd) != 0,
                    LBK_ERR_IO, "%s: cannot sync the partial file: %s", files[i]->temp,
                    strerror(errno));
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++)
        LBK_FAIL_IF(s->held_fd[h] >= 0 && fdatasync(s->held_fd[h]) != 0, LBK_ERR_IO,
                    "rank %d: cannot sync its held %s: %s", s->comm->rank, held_keys[h],
                    strerror(errno));
    return LBK_OK;
}

/* Each of this rank's parts' CRC, extended over what was written since
 * the last checkpoint (a part only grows at its end, so earlier bytes
 * stay): a checkpoint reads back what the interval wrote, not the files. */
static lbk_status extend_crcs(lbk_run_state *s, uint64_t done)
{
    unsigned char buf[1 << 16];
    for (int i = 0; i < LBK_RUN_PARTS; i++) {
        if (!s->kept_on[i])
            continue;
        const int fd = part_fd(s, i);
        uint64_t start, len;
        LBK_TRY(part_extent(s, i, done, fd, &start, &len));
        while (s->kept_len[i] < len) {
            const uint64_t left = len - s->kept_len[i];
            const ssize_t n = pread(fd, buf, left < sizeof buf ? left : sizeof buf,
                                    (off_t)(start + s->kept_len[i]));
            LBK_FAIL_IF(n <= 0, LBK_ERR_IO, "rank %d: cannot read its %s back: %s", s->comm->rank,
                        part_key(i), n < 0 ? strerror(errno) : "it ended early");
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

/* Rank 0: PATH.tmp written and synced, PATH kept as PATH.prev, PATH.tmp
 * renamed over PATH. */
static lbk_status write_checkpoint(const lbk_run_state *s, uint64_t done,
                                   const unsigned char *all)
{
    char *text = NULL;
    size_t len = 0;
    const char *path = s->job->run.checkpoint;
    char tmp[LBK_PATH_MAX + 8], prev[LBK_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(prev, sizeof prev, "%s.prev", path);
    LBK_TRY(render(s, done, all, &text, &len));
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
     * by one rename: at no moment is there no checkpoint. */
    if (st == LBK_OK)
        unlink(prev);
    if (st == LBK_OK && access(path, F_OK) == 0 && link(path, prev) != 0) {
        lbk_error("run.checkpoint: cannot keep %s as %s: %s", path, prev, strerror(errno));
        st = LBK_ERR_IO;
    }
    if (st == LBK_OK && rename(tmp, path) != 0) {
        lbk_error("run.checkpoint: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        st = LBK_ERR_IO;
    }
    return st;
}

/* Collective: every rank syncs; then each extends its parts' CRCs (rank 0
 * reading back what the others wrote, where they write slices of its
 * files), sends them and its scores to rank 0, which writes. */
static lbk_status checkpoint_now(lbk_run_state *s, uint64_t done)
{
    const size_t one = rank_bytes(s);
    unsigned char *mine = NULL, *all = NULL;
    LBK_TRY(lbk_comm_agree(s->comm, sync_files(s)));
    lbk_status st = extend_crcs(s, done);
    if (st == LBK_OK) {
        mine = malloc(one);
        all = malloc(one * (size_t)s->comm->size);
        if (!mine || !all) {
            lbk_error("rank %d: out of host memory writing the checkpoint", s->comm->rank);
            st = LBK_ERR_NOMEM;
        }
    }
    st = lbk_comm_agree(s->comm, st);
    if (st == LBK_OK) {
        pack_rank(s, mine);
        st = lbk_comm_allgather_bytes(s->comm, mine, all, (int)one);
        if (st == LBK_OK && s->root)
            st = write_checkpoint(s, done, all);
        st = lbk_comm_agree(s->comm, st);
    }
    free(mine);
    free(all);
    return st;
}

/* data[held_written, upto) to the end of held file h. */
static lbk_status held_append(lbk_run_state *s, int h, const char *data, uint64_t upto)
{
    uint64_t at = s->held_written[h];
    while (at < upto) {
        const ssize_t n = pwrite(s->held_fd[h], data + at, (size_t)(upto - at), (off_t)at);
        if (n < 0 && errno == EINTR)
            continue;
        LBK_FAIL_IF(n < 0, LBK_ERR_IO, "rank %d: cannot write its held %s: %s", s->comm->rank,
                    held_keys[h], strerror(errno));
        at += (uint64_t)n;
    }
    s->held_written[h] = upto;
    return LBK_OK;
}

/* An owned slice's batch: what the end will write (predictions, the
 * probability rows) goes to this rank's held files too. */
static lbk_status hold_batch(lbk_run_state *s, uint64_t done)
{
    if (s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS]) {
        const char *values = s->values ? (const char *)s->values : (const char *)s->predictions;
        const size_t bytes = s->values ? sizeof *s->values : sizeof *s->predictions;
        LBK_TRY(held_append(s, LBK_RUN_HELD_PREDICTIONS, values, rows_done(s, done) * bytes));
    }
    if (s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PROBABILITIES]) {
        LBK_FAIL_IF(fflush(s->proba_rows) != 0, LBK_ERR_NOMEM,
                    "out of host memory rendering probabilities");
        LBK_TRY(held_append(s, LBK_RUN_HELD_PROBABILITIES, s->proba_text, s->proba_text_len));
    }
    return LBK_OK;
}

lbk_status lbk_checkpoint_after_batch(void *run_state, uint64_t done)
{
    lbk_run_state *s = run_state;
    if (s->plan.owns_slice)
        LBK_TRY(lbk_comm_agree(s->comm, hold_batch(s, done)));
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
    LBK_TRY(checkpoint_now(s, done));
    s->t_checkpoint = lbk_timer_now();
    if (want < 2)
        return LBK_OK;
    if (s->root)
        lbk_info("stopped after batch %" PRIu64 " of %" PRIu64 "; checkpoint %s written; "
                 "continue with lbknn run JOB --resume",
                 done, batches, s->job->run.checkpoint);
    return LBK_STOPPED;
}

static void remove_checkpoint_files(const lbk_job *job)
{
    char name[LBK_PATH_MAX + 8];
    unlink(job->run.checkpoint);
    snprintf(name, sizeof name, "%s.prev", job->run.checkpoint);
    unlink(name);
    snprintf(name, sizeof name, "%s.tmp", job->run.checkpoint);
    unlink(name);
}

void lbk_checkpoint_close(lbk_run_state *s)
{
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++) {
        if (s->held_fd[h] >= 0)
            close(s->held_fd[h]);
        s->held_fd[h] = -1;
    }
}

void lbk_checkpoint_remove(lbk_run_state *s)
{
    char name[LBK_PATH_MAX + 64];
    lbk_checkpoint_close(s);
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++) {
        if (!s->kept_on[LBK_JOB_OUTPUT_COUNT + h])
            continue;
        part_name(s, LBK_JOB_OUTPUT_COUNT + h, name, sizeof name);
        unlink(name);
    }
    if (s->root)
        remove_checkpoint_files(s->job);
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

/* Bytes [start, start + len) of this rank's part `key` in `name` have this
 * CRC (one line naming the rank and the file if not). */
static lbk_status verify_part(const char *ckpt, int rank, const char *key, const char *name,
                              uint64_t start, uint64_t len, uint32_t crc)
{
    struct stat sb;
    unsigned char buf[1 << 16];
    LBK_FAIL_IF(stat(name, &sb) != 0, LBK_ERR_INPUT,
                "%s: --resume refused: rank %d's %s partial file %s is missing", ckpt, rank, key,
                name);
    LBK_FAIL_IF((uint64_t)sb.st_size < start + len, LBK_ERR_INPUT,
                "%s: --resume refused: rank %d's %s partial file %s has %lld bytes, fewer than "
                "the checkpointed %" PRIu64,
                ckpt, rank, key, name, (long long)sb.st_size, start + len);
    const int fd = open(name, O_RDONLY | O_CLOEXEC);
    LBK_FAIL_IF(fd < 0, LBK_ERR_IO, "%s: rank %d: cannot open %s: %s", ckpt, rank, name,
                strerror(errno));
    uint32_t c = 0;
    for (uint64_t at = 0; at < len;) {
        const uint64_t left = len - at;
        const ssize_t n =
            pread(fd, buf, left < sizeof buf ? left : sizeof buf, (off_t)(start + at));
        if (n <= 0)
            break;
        c = lbk_saved_crc32(c, buf, (size_t)n);
        at += (uint64_t)n;
    }
    close(fd);
    LBK_FAIL_IF(c != crc, LBK_ERR_INPUT,
                "%s: --resume refused: rank %d's %s partial file %s differs from the "
                "checkpointed one in bytes %" PRIu64 " to %" PRIu64 " (CRC-32 %08" PRIx32
                ", checkpoint %08" PRIx32 ")",
                ckpt, rank, key, name, start, start + len, c, crc);
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

/* Any partial file this rank would write (rank 0: of every output; each
 * rank: its held files), named into `name`. */
static bool any_partial(const lbk_run_state *s, char *name, size_t size)
{
    for (int i = 0; i < LBK_RUN_PARTS; i++) {
        const bool output = i < LBK_JOB_OUTPUT_COUNT && s->root && output_path(s->job, i)[0] &&
                            !is_output(i, "output.report");
        if (!output && !(i >= LBK_JOB_OUTPUT_COUNT && s->kept_on[i]))
            continue;
        part_name(s, i, name, size);
        if (access(name, F_OK) == 0)
            return true;
    }
    return false;
}

/* A "part" line of this rank's: its length and CRC into kept_len and
 * kept_crc; *mine whether it was this rank's. */
static lbk_status parse_part(lbk_run_state *s, const char *ckpt, const char *line, size_t len,
                             bool seen[LBK_RUN_PARTS])
{
    int rank;
    char key[64];
    uint64_t bytes;
    uint32_t crc;
    LBK_FAIL_IF(len > 200 || sscanf(line, "part %d %63s %" SCNu64 " %" SCNx32, &rank, key, &bytes,
                                    &crc) != 4,
                LBK_ERR_INPUT, "%s: --resume refused: the checkpoint's part line is unreadable",
                ckpt);
    if (rank != s->comm->rank)
        return LBK_OK;
    for (int i = 0; i < LBK_RUN_PARTS; i++) {
        if (strcmp(key, part_key(i)) != 0 || !s->kept_on[i])
            continue;
        s->kept_len[i] = bytes;
        s->kept_crc[i] = crc;
        seen[i] = true;
        return LBK_OK;
    }
    lbk_error("%s: --resume refused: the checkpoint names a part %s of rank %d that this run "
              "does not write",
              ckpt, key, rank);
    return LBK_ERR_INPUT;
}

/* This rank's "state" line: its scores so far. */
static lbk_status parse_state(lbk_run_state *s, const char *ckpt, const char *line, size_t len,
                              bool *seen)
{
    int rank, skip = 0;
    if (sscanf(line, "state %d %n", &rank, &skip) != 1 || skip == 0)
        return LBK_OK; /* not one: the caller says what is missing */
    if (rank != s->comm->rank)
        return LBK_OK;
    const size_t bytes = state_bytes(s);
    unsigned char *p = malloc(bytes);
    LBK_FAIL_IF(!p, LBK_ERR_NOMEM, "out of host memory reading the checkpoint");
    const bool ok = len - (size_t)skip == 2 * bytes && unhex(line + skip, 2 * bytes, p, bytes);
    if (ok)
        unpack_state(s, p);
    free(p);
    LBK_FAIL_IF(!ok, LBK_ERR_INPUT,
                "%s: --resume refused: rank %d's scores in the checkpoint are unreadable", ckpt,
                rank);
    *seen = true;
    return LBK_OK;
}

/* This rank's part i, as the checkpoint says, is in its file; rank 0 then
 * knows the length to open the output at. */
static lbk_status verify_mine(lbk_run_state *s, const char *ckpt, int i)
{
    char name[LBK_PATH_MAX + 64];
    uint64_t start = 0, len = s->kept_len[i];
    const lbk_outputs_shape shape = shape_of(s);
    part_name(s, i, name, sizeof name);
    const bool rows = i < LBK_JOB_OUTPUT_COUNT && s->plan.owns_slice;
    if (rows)
        lbk_outputs_rows_span(s->job, &shape, i, s->query_first, rows_done(s, s->done_batches),
                              &start, &len);
    if (i == LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS)
        len = rows_done(s, s->done_batches) *
              (s->values ? sizeof *s->values : sizeof *s->predictions);
    LBK_FAIL_IF(len != s->kept_len[i], LBK_ERR_INPUT,
                "%s: --resume refused: rank %d's %s has %" PRIu64 " bytes in the checkpoint, "
                "not the %" PRIu64 " of its batches",
                ckpt, s->comm->rank, part_key(i), s->kept_len[i], len);
    LBK_TRY(verify_part(ckpt, s->comm->rank, part_key(i), name, start, len, s->kept_crc[i]));
    if (i < LBK_JOB_OUTPUT_COUNT)
        s->kept_cut[i] = rows ? LBK_OUTFILE_KEEP_LENGTH : len;
    return LBK_OK;
}

/* Every rank, from the checkpoint past its identity: done, this rank's
 * parts (each verified in its file), the text offsets, its scores. */
static lbk_status parse_progress(lbk_run_state *s, const char *ckpt, const char *at)
{
    bool seen[LBK_RUN_PARTS] = {false}, state = false;
    size_t len;
    const char *line = next_line(&at, &len);
    LBK_FAIL_IF(sscanf(line, "done %" SCNu64, &s->done_batches) != 1, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint has no batch count", ckpt);
    while (strncmp(at, "part ", 5) == 0) {
        line = next_line(&at, &len);
        LBK_TRY(parse_part(s, ckpt, line, len, seen));
    }
    bool ok = sscanf(next_line(&at, &len), "text_offset %" SCNu64, &s->outputs.text_offset) == 1;
    ok = ok &&
         sscanf(next_line(&at, &len), "proba_offset %" SCNu64, &s->outputs.proba_offset) == 1;
    LBK_FAIL_IF(!ok, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint's offsets are unreadable", ckpt);
    while (strncmp(at, "state ", 6) == 0) {
        line = next_line(&at, &len);
        LBK_TRY(parse_state(s, ckpt, line, len, &state));
    }
    LBK_FAIL_IF(!state, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint has no scores of rank %d", ckpt,
                s->comm->rank);
    for (int i = 0; i < LBK_RUN_PARTS; i++)
        LBK_FAIL_IF(s->kept_on[i] && !seen[i], LBK_ERR_INPUT,
                    "%s: --resume refused: the checkpoint names no %s of rank %d", ckpt,
                    part_key(i), s->comm->rank);
    for (int i = 0; i < LBK_RUN_PARTS; i++)
        if (s->kept_on[i])
            LBK_TRY(verify_mine(s, ckpt, i));
    return LBK_OK;
}

/* Rank 0: the checkpoint's text, whole and of this run (*text NULL: there
 * is none), and where its progress starts. */
static lbk_status read_checkpoint(const lbk_run_state *s, char **text, size_t *len,
                                  uint64_t *progress)
{
    const char *ckpt = s->job->run.checkpoint;
    *text = read_whole(ckpt, len);
    if (!*text && errno == ENOENT)
        return LBK_OK;
    LBK_FAIL_IF(!*text, LBK_ERR_IO, "%s: cannot read the checkpoint: %s", ckpt, strerror(errno));
    LBK_FAIL_IF(!intact(*text, *len), LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint is corrupted (its CRC-32 does not match)",
                ckpt);
    const char *at = *text;
    LBK_TRY(compare_identity(s, ckpt, &at));
    *progress = (uint64_t)(at - *text);
    return LBK_OK;
}

/* Collective: rank 0's checkpoint text on every rank (NULL: none). */
static lbk_status share_checkpoint(lbk_run_state *s, char **text, uint64_t *progress)
{
    size_t len = 0;
    lbk_status st = s->root ? read_checkpoint(s, text, &len, progress) : LBK_OK;
    LBK_TRY(lbk_comm_agree(s->comm, st));
    uint64_t head[2] = {*text ? (uint64_t)len : 0, *progress};
    LBK_TRY(lbk_comm_bcast_bytes(s->comm, head, sizeof head));
    if (head[0] == 0)
        return LBK_OK;
    if (!s->root) {
        *text = malloc(head[0] + 1);
        if (*text)
            (*text)[head[0]] = '\0';
        st = *text ? LBK_OK : LBK_ERR_NOMEM;
        if (st != LBK_OK)
            lbk_error("rank %d: out of host memory reading the checkpoint", s->comm->rank);
    }
    LBK_TRY(lbk_comm_agree(s->comm, st));
    *progress = head[1];
    return lbk_comm_bcast_bytes(s->comm, *text, head[0]);
}

lbk_status lbk_checkpoint_restore(lbk_run_state *s, bool resume)
{
    const char *ckpt = s->job->run.checkpoint;
    char name[LBK_PATH_MAX + 64];
    plan_parts(s);
    memset(s->kept_cut, 0, sizeof s->kept_cut);
    s->t_checkpoint = lbk_timer_now();
    if (!resume) {
        /* A fresh run: an earlier run's checkpoint no longer describes the
         * partial files it is about to cut. */
        if (s->root)
            remove_checkpoint_files(s->job);
        return LBK_OK;
    }
    char *text = NULL;
    uint64_t progress = 0;
    lbk_status st = share_checkpoint(s, &text, &progress);
    if (st != LBK_OK) {
        free(text);
        return st;
    }
    const bool had = text != NULL;
    if (!text && any_partial(s, name, sizeof name)) {
        lbk_error("%s: --resume refused: the partial file %s exists but no checkpoint does", ckpt,
                  name);
        st = LBK_ERR_INPUT;
    }
    if (text)
        st = parse_progress(s, ckpt, text + progress);
    free(text);
    LBK_TRY(lbk_comm_agree(s->comm, st));
    if (s->root && !had)
        lbk_info("%s: no checkpoint and no partial files: starting from the first batch", ckpt);
    else if (s->root)
        lbk_info("%s: resuming after batch %" PRIu64, ckpt, s->done_batches);
    return LBK_OK;
}

/* Held file h's first len bytes back where they were before the stop. */
static lbk_status reload_held(lbk_run_state *s, int h, uint64_t len)
{
    char *data = h == LBK_RUN_HELD_PREDICTIONS
                     ? (s->values ? (char *)s->values : (char *)s->predictions)
                     : malloc(len);
    LBK_FAIL_IF(!data, LBK_ERR_NOMEM, "rank %d: out of host memory reloading its %s",
                s->comm->rank, held_keys[h]);
    lbk_status st = LBK_OK;
    for (uint64_t at = 0; at < len && st == LBK_OK;) {
        const ssize_t n = pread(s->held_fd[h], data + at, (size_t)(len - at), (off_t)at);
        if (n <= 0) {
            lbk_error("rank %d: cannot read its %s back: %s", s->comm->rank, held_keys[h],
                      n < 0 ? strerror(errno) : "it ended early");
            st = LBK_ERR_IO;
        }
        at += n > 0 ? (uint64_t)n : 0;
    }
    if (st == LBK_OK && h == LBK_RUN_HELD_PROBABILITIES &&
        fwrite(data, 1, len, s->proba_rows) != len) {
        lbk_error("out of host memory rendering probabilities");
        st = LBK_ERR_NOMEM;
    }
    if (h == LBK_RUN_HELD_PROBABILITIES)
        free(data);
    return st;
}

lbk_status lbk_checkpoint_open_held(lbk_run_state *s)
{
    char name[LBK_PATH_MAX + 64];
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++) {
        const int i = LBK_JOB_OUTPUT_COUNT + h;
        if (!s->kept_on[i])
            continue;
        part_name(s, i, name, sizeof name);
        /* Not remembered by the signal handlers: the checkpoint names it. */
        s->held_fd[h] = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        LBK_FAIL_IF(s->held_fd[h] < 0, LBK_ERR_IO, "rank %d: cannot create its held file %s: %s",
                    s->comm->rank, name, strerror(errno));
        LBK_FAIL_IF(ftruncate(s->held_fd[h], (off_t)s->kept_len[i]) != 0, LBK_ERR_IO,
                    "rank %d: cannot cut its held file %s to %" PRIu64 " bytes: %s",
                    s->comm->rank, name, s->kept_len[i], strerror(errno));
        s->held_written[h] = s->kept_len[i];
        LBK_TRY(reload_held(s, h, s->kept_len[i]));
    }
    return LBK_OK;
}
