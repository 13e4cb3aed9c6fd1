/* _POSIX_C_SOURCE's fdatasync, sigaction and stat's st_mtim. */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include "log.h"
#include "outfile.h"
#include "saved.h"
#include "timer.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t stop_asked;
static bool usr1_ignored; /* by the caller, before lbk_checkpoint_catch_early */

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static void catch_stop_signal(void)
{
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

void lbk_checkpoint_catch_early(void)
{
    struct sigaction old;
    usr1_ignored = sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_IGN;
    catch_stop_signal();
}

void lbk_checkpoint_handle_signal(const lbk_job *job)
{
    if (job->run.checkpoint[0]) {
        catch_stop_signal();
        return;
    }
    /* No checkpoint to stop with: SIGUSR1 ends the run as SIGTERM does
     * (its partial files removed), one that came during the start-up
     * included, unless the caller had it ignored. */
    if (usr1_ignored) {
        struct sigaction ignore;
        memset(&ignore, 0, sizeof ignore);
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        sigaction(SIGUSR1, &ignore, NULL);
        return;
    }
    lbk_cleanup_handle_signal(SIGUSR1);
    if (stop_asked)
        raise(SIGUSR1);
}

void lbk_checkpoint_hold_signal(sigset_t *held)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, held);
}

void lbk_checkpoint_release_signal(const lbk_job *job, const sigset_t *held)
{
    lbk_checkpoint_handle_signal(job);
    pthread_sigmask(SIG_SETMASK, held, NULL);
}

static int part_fd(lbk_run_state *s, int i)
{
    lbk_outfile *files[LBK_JOB_OUTPUT_COUNT];
    if (i >= LBK_JOB_OUTPUT_COUNT)
        return s->held_fd[i - LBK_JOB_OUTPUT_COUNT];
    lbk_outputs_files(&s->outputs, files);
    return files[i]->kept ? files[i]->fd : -1;
}

static void hex(FILE *f, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        fprintf(f, "%02x", p[i]);
}

/* ---- what every rank sends rank 0 ---------------------------------------- */

/* A rank's parts, the rows they hold (as ranges of the query file: at most
 * todo_count of them) and its scores so far, bit for bit. */
typedef struct {
    uint64_t len[LBK_RUN_PARTS];
    uint32_t crc[LBK_RUN_PARTS];
    uint8_t on[LBK_RUN_PARTS];
    uint64_t id, ranges;
} part_table;

static size_t rank_bytes(const lbk_run_state *s)
{
    return sizeof(part_table) + s->todo_count * sizeof(lbk_run_range) +
           lbk_checkpoint_state_bytes(s);
}

/* This rank's done rows of its slice as ranges of the query file. */
static uint64_t done_ranges(const lbk_run_state *s, uint64_t rows, lbk_run_range *out)
{
    uint64_t n = 0;
    for (uint64_t q = 0; q < rows;) {
        uint64_t run;
        const uint64_t g = lbk_run_rows_global(s, s->query_first + q, &run);
        run = run < rows - q ? run : rows - q;
        out[n++] = (lbk_run_range){g, run};
        q += run;
    }
    return n;
}

static void pack_rank(const lbk_run_state *s, uint64_t done, unsigned char *p)
{
    part_table t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < LBK_RUN_PARTS; i++) {
        t.on[i] = s->kept_on[i];
        t.len[i] = s->kept_len[i];
        t.crc[i] = s->kept_crc[i];
    }
    lbk_run_range *ranges = (lbk_run_range *)(p + sizeof t);
    memset(ranges, 0, s->todo_count * sizeof *ranges);
    t.id = lbk_checkpoint_stream_id(s);
    if (s->plan.owns_slice) {
        t.ranges = done_ranges(s, lbk_checkpoint_rows_done(s, done), ranges);
    } else if (s->root) { /* whole files: the rows before this run's and its own */
        t.id = 0;
        ranges[0] = (lbk_run_range){0, s->done_rows + lbk_checkpoint_rows_done(s, done)};
        t.ranges = ranges[0].count > 0;
    }
    memcpy(p, &t, sizeof t);
    lbk_checkpoint_pack_state(s, p + sizeof t + s->todo_count * sizeof(lbk_run_range));
}

/* One stream's lines: "stream ID RANGES FIRST COUNT ..." and its parts
 * ("part ID KEY LENGTH CRC"). */
static void stream_lines(const lbk_checkpoint_stream *m, FILE *f)
{
    fprintf(f, "stream %" PRIu64 " %" PRIu64, m->id, m->ranges);
    for (uint64_t r = 0; r < m->ranges; r++)
        fprintf(f, " %" PRIu64 " %" PRIu64, m->range[r].first, m->range[r].count);
    fprintf(f, "\n");
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_GRAPH; i++)
        if (m->on[i])
            fprintf(f, "part %" PRIu64 " %s %" PRIu64 " %08" PRIx32 "\n", m->id,
                    lbk_checkpoint_part_key(i), m->len[i], m->crc[i]);
}

/* Every stream with finished rows (the checkpoint's before this run, then
 * every rank's of this run; rank 0's whole files where the plan does not
 * own slices), the text offsets, the scores of every rank merged (from
 * `all`, rank_bytes each, in rank order) and, first, the finished count. */
static lbk_status rank_lines(const lbk_run_state *s, unsigned char *all, FILE *f)
{
    const size_t one = rank_bytes(s), ranges = s->todo_count * sizeof(lbk_run_range);
    const struct lbk_checkpoint_kept *k = s->resumed;
    /* The checkpoint's rows, as streams of their own where ranks own slices
     * (rank 0's one stream has them otherwise), and every rank's of this run. */
    uint64_t finished = s->plan.owns_slice ? s->done_rows : 0;
    lbk_checkpoint_stream *mine = calloc((size_t)s->comm->size, sizeof *mine);
    LBK_FAIL_IF(!mine, LBK_ERR_NOMEM, "out of host memory writing the checkpoint");
    for (int r = 0; r < s->comm->size; r++) {
        part_table t;
        memcpy(&t, all + (size_t)r * one, sizeof t);
        lbk_checkpoint_stream *m = &mine[r];
        m->id = t.id;
        m->ranges = t.ranges;
        m->range = (lbk_run_range *)(all + (size_t)r * one + sizeof t);
        for (int i = 0; i < LBK_RUN_PARTS; i++) {
            m->on[i] = t.on[i];
            m->len[i] = t.len[i];
            m->crc[i] = t.crc[i];
        }
        for (uint64_t g = 0; g < t.ranges; g++)
            finished += m->range[g].count;
    }
    fprintf(f, "done %" PRIu64 "\n", finished);
    for (uint64_t i = 0; k && i < k->stream_count; i++)
        stream_lines(&k->streams[i], f);
    for (int r = 0; r < s->comm->size; r++)
        if (!s->plan.owns_slice ? r == 0 : mine[r].ranges > 0)
            stream_lines(&mine[r], f);
    /* Task graph: every rank's held rows, the checkpoint's runs' first. */
    const int g = LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_GRAPH;
    for (uint64_t i = 0; k && i < k->graph_file_count; i++)
        fprintf(f, "graphfile %" PRIu64 " %d %" PRIu64 " %08" PRIx32 "\n", k->graph_files[i].run,
                k->graph_files[i].rank, k->graph_files[i].len, k->graph_files[i].crc);
    for (int r = 0; r < s->comm->size; r++)
        if (mine[r].on[g] && mine[r].len[g] > 0)
            fprintf(f, "graphfile %" PRIu64 " %d %" PRIu64 " %08" PRIx32 "\n", s->done_rows, r,
                    mine[r].len[g], mine[r].crc[g]);
    free(mine);
    fprintf(f, "text_offset %" PRIu64 "\nproba_offset %" PRIu64 "\n", s->outputs.text_offset,
            s->outputs.proba_offset);
    unsigned char *state = all + sizeof(part_table) + ranges;
    for (int r = 1; r < s->comm->size; r++)
        lbk_checkpoint_merge_state(s, state, all + (size_t)r * one + sizeof(part_table) + ranges);
    fprintf(f, "state ");
    hex(f, state, lbk_checkpoint_state_bytes(s));
    fprintf(f, "\n");
    return LBK_OK;
}

/* The whole checkpoint text, ending in its own CRC. */
static lbk_status render(const lbk_run_state *s, unsigned char *all, char **text, size_t *len)
{
    size_t job_len = 0;
    char *job = lbk_checkpoint_canonical_job(s->job, &job_len);
    LBK_FAIL_IF(!job, LBK_ERR_NOMEM, "out of host memory writing the checkpoint");
    FILE *f = open_memstream(text, len);
    if (!f) {
        free(job);
        lbk_error("out of host memory writing the checkpoint");
        return LBK_ERR_NOMEM;
    }
    lbk_checkpoint_identity_lines(s, lbk_saved_crc32(0, job, job_len), f);
    fprintf(f, "partition %d\n", (int)s->plan.partition);
    /* Compact points' keys are exact where float32's round: a resume must
     * search at the same width (knn.engine, not hashed, may widen them). */
    const lbk_dtype points = lbk_index_points_type(s->index);
    if (points != LBK_DTYPE_FLOAT32)
        fprintf(f, "points %s\n", lbk_dtype_name(points));
    const lbk_outputs_shape shape = lbk_checkpoint_shape(s);
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        if (lbk_checkpoint_is_hdf5(s, i) && lbk_checkpoint_output_path(s->job, i)[0])
            fprintf(f, "hdf5 %s %" PRIu64 "\n", lbk_checkpoint_part_key(i), shape.hdf5_offset[i]);
    const lbk_status st = rank_lines(s, all, f);
    if (st != LBK_OK) {
        fclose(f);
        free(*text);
        *text = NULL;
        free(job);
        return st;
    }
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
                    "rank %d: cannot sync its held %s: %s", s->comm->rank,
                    lbk_checkpoint_part_key(LBK_JOB_OUTPUT_COUNT + h), strerror(errno));
    return LBK_OK;
}

/* Each of this rank's parts' CRC, extended over what was written since
 * the last checkpoint (a part only grows at its end, so earlier bytes
 * stay): a checkpoint reads back what the interval wrote, not the files.
 * An owned slice's rows of an array are its rows' spans, in row order. */
static lbk_status extend_crcs(lbk_run_state *s, uint64_t done)
{
    lbk_run_range *ranges = malloc((s->todo_count + 1) * sizeof *ranges);
    LBK_FAIL_IF(!ranges, LBK_ERR_NOMEM, "rank %d: out of host memory writing the checkpoint",
                s->comm->rank);
    uint64_t n = 1;
    if (s->plan.owns_slice)
        n = done_ranges(s, lbk_checkpoint_rows_done(s, done), ranges);
    else /* rank 0: every row so far, the checkpoint's included */
        ranges[0] = (lbk_run_range){0, s->done_rows + lbk_checkpoint_rows_done(s, done)};
    lbk_status st = LBK_OK;
    for (int i = 0; i < LBK_RUN_PARTS && st == LBK_OK; i++) {
        if (!s->kept_on[i])
            continue;
        const int fd = part_fd(s, i);
        if (i < LBK_JOB_OUTPUT_COUNT && (s->plan.owns_slice || lbk_checkpoint_is_hdf5(s, i))) {
            uint64_t skip = s->kept_len[i];
            for (uint64_t r = 0; r < n && st == LBK_OK; r++)
                if (!lbk_checkpoint_crc_rows(s, i, fd, ranges[r].first, ranges[r].count, &skip,
                                             &s->kept_crc[i], &s->kept_len[i])) {
                    lbk_error("rank %d: cannot read its %s back: %s", s->comm->rank,
                              lbk_checkpoint_part_key(i), lbk_checkpoint_read_error());
                    st = LBK_ERR_IO;
                }
            continue;
        }
        struct stat sb;
        uint64_t len = i >= LBK_JOB_OUTPUT_COUNT ? s->held_written[i - LBK_JOB_OUTPUT_COUNT] : 0;
        if (i < LBK_JOB_OUTPUT_COUNT && (fd < 0 || fstat(fd, &sb) != 0)) {
            lbk_error("%s: cannot stat the partial file: %s",
                      lbk_checkpoint_output_path(s->job, i), strerror(errno));
            st = LBK_ERR_IO;
            break;
        }
        if (i < LBK_JOB_OUTPUT_COUNT)
            len = (uint64_t)sb.st_size;
        if (len > s->kept_len[i] &&
            !lbk_checkpoint_crc_bytes(fd, s->kept_len[i], len - s->kept_len[i],
                                      &s->kept_crc[i])) {
            lbk_error("rank %d: cannot read its %s back: %s", s->comm->rank,
                      lbk_checkpoint_part_key(i), lbk_checkpoint_read_error());
            st = LBK_ERR_IO;
        }
        if (len > s->kept_len[i])
            s->kept_len[i] = len;
    }
    free(ranges);
    return st;
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
static lbk_status write_checkpoint(lbk_run_state *s, unsigned char *all)
{
    char *text = NULL;
    size_t len = 0;
    const char *path = s->job->run.checkpoint;
    char tmp[LBK_PATH_MAX + 8], prev[LBK_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(prev, sizeof prev, "%s.prev", path);
    LBK_TRY(render(s, all, &text, &len));
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
        pack_rank(s, done, mine);
        st = lbk_comm_allgather_bytes(s->comm, mine, all, (int)one);
        if (st == LBK_OK && s->root)
            st = write_checkpoint(s, all);
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
                    lbk_checkpoint_part_key(LBK_JOB_OUTPUT_COUNT + h), strerror(errno));
        at += (uint64_t)n;
    }
    s->held_written[h] = upto;
    return LBK_OK;
}

lbk_status lbk_checkpoint_hold_graph(lbk_run_state *s, const lbk_self_rows *rows,
                                     const lbk_index_slice *b, const uint32_t *order)
{
    const size_t record = lbk_self_rows_record_bytes(rows);
    const int h = LBK_RUN_HELD_GRAPH;
    if (b->slice_count == 0 || s->held_fd[h] < 0)
        return LBK_OK;
    char *recs = malloc(record * b->slice_count);
    LBK_FAIL_IF(!recs, LBK_ERR_NOMEM, "rank %d: out of host memory holding graph rows",
                s->comm->rank);
    for (uint64_t q = 0; q < b->slice_count; q++)
        lbk_self_rows_pack(rows, order[b->first + b->slice_first + q],
                           b->lists + q * (uint64_t)b->k, recs + q * record);
    lbk_status st = LBK_OK;
    const size_t len = record * b->slice_count;
    for (size_t at = 0; at < len && st == LBK_OK;) {
        const ssize_t n =
            pwrite(s->held_fd[h], recs + at, len - at, (off_t)(s->held_written[h] + at));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            lbk_error("rank %d: cannot write its held graph rows: %s", s->comm->rank,
                      strerror(errno));
            st = LBK_ERR_IO;
        }
        at += n > 0 ? (size_t)n : 0;
    }
    if (st == LBK_OK)
        s->held_written[h] += len;
    free(recs);
    return st;
}

/* An owned slice's batch: what the end will write (predictions, the
 * probability rows) goes to this rank's held files too. */
static lbk_status hold_batch(lbk_run_state *s, uint64_t done)
{
    if (s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS]) {
        const char *values = s->values ? (const char *)s->values : (const char *)s->predictions;
        const size_t bytes = s->values ? sizeof *s->values : sizeof *s->predictions;
        LBK_TRY(held_append(s, LBK_RUN_HELD_PREDICTIONS, values,
                            lbk_checkpoint_rows_done(s, done) * bytes));
    }
    if (s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PROBABILITIES]) {
        LBK_FAIL_IF(fflush(s->proba_rows) != 0, LBK_ERR_NOMEM,
                    "out of host memory rendering probabilities");
        LBK_TRY(held_append(s, LBK_RUN_HELD_PROBABILITIES, s->proba_text, s->proba_text_len));
    }
    return LBK_OK;
}

static lbk_status after_batch(lbk_run_state *s, uint64_t done)
{
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
    s->checkpoints++;
    s->t_checkpoint = lbk_timer_now();
    if (want < 2)
        return LBK_OK;
    if (s->root)
        lbk_info("stopped after batch %" PRIu64 " of %" PRIu64 " of this run; checkpoint %s "
                 "written; continue with lbknn run JOB --resume (on any number of ranks)",
                 done, batches, s->job->run.checkpoint);
    return LBK_STOPPED;
}

/* Timed: what checkpoints cost the batch loop, measured inside the run
 * whose search phase it is part of (a second run's search time varies
 * more from run to run than the checkpoints cost). */
lbk_status lbk_checkpoint_after_batch(void *run_state, uint64_t done)
{
    lbk_run_state *s = run_state;
    const double t = lbk_timer_now();
    const lbk_status st = after_batch(s, done);
    s->checkpoint_s += lbk_timer_now() - t;
    return st;
}

void lbk_checkpoint_close(lbk_run_state *s)
{
    lbk_checkpoint_kept_free(s->resumed);
    s->resumed = NULL;
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++) {
        if (s->held_fd[h] >= 0)
            close(s->held_fd[h]);
        s->held_fd[h] = -1;
    }
}

void lbk_checkpoint_remove(lbk_run_state *s)
{
    char name[LBK_PATH_MAX + 64];
    for (int h = 0; h < LBK_RUN_HELD_COUNT; h++) {
        if (!s->kept_on[LBK_JOB_OUTPUT_COUNT + h])
            continue;
        lbk_checkpoint_part_name(s, LBK_JOB_OUTPUT_COUNT + h, name, sizeof name);
        unlink(name);
    }
    /* The held files of the runs before this one. */
    const struct lbk_checkpoint_kept *k = s->resumed;
    for (uint64_t m = 0; s->root && k && m < k->graph_file_count; m++) {
        lbk_checkpoint_graph_name(s, k->graph_files[m].run, k->graph_files[m].rank, name,
                                  sizeof name);
        unlink(name);
    }
    for (uint64_t m = 0; s->root && k && m < k->stream_count; m++)
        for (int i = LBK_JOB_OUTPUT_COUNT; i < LBK_RUN_PARTS; i++) {
            if (!k->streams[m].on[i])
                continue;
            lbk_checkpoint_held_name(s, i, k->streams[m].id, name, sizeof name);
            unlink(name);
        }
    if (s->root)
        lbk_checkpoint_remove_files(s->job);
    lbk_checkpoint_close(s);
}
