/* --resume (checkpoint.h): the checkpoint read back by rank 0 and checked
 * against this run, then every rank's parts against its files, before
 * anything is opened for writing; the held files reloaded. */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include "log.h"
#include "saved.h"
#include "timer.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    char *job = lbk_checkpoint_canonical_job(s->job, &job_len), *mine = NULL;
    LBK_FAIL_IF(!job, LBK_ERR_NOMEM, "out of host memory reading the checkpoint");
    FILE *f = open_memstream(&mine, &len);
    if (f) {
        lbk_checkpoint_identity_lines(s, lbk_saved_crc32(0, job, job_len), f);
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
        const bool output = i < LBK_JOB_OUTPUT_COUNT && s->root &&
                            lbk_checkpoint_output_path(s->job, i)[0] &&
                            !lbk_checkpoint_is_output(i, "output.report");
        if (!output && !(i >= LBK_JOB_OUTPUT_COUNT && s->kept_on[i]))
            continue;
        lbk_checkpoint_part_name(s, i, name, size);
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
        if (strcmp(key, lbk_checkpoint_part_key(i)) != 0 || !s->kept_on[i])
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
    const size_t bytes = lbk_checkpoint_state_bytes(s);
    unsigned char *p = malloc(bytes);
    LBK_FAIL_IF(!p, LBK_ERR_NOMEM, "out of host memory reading the checkpoint");
    const bool ok = len - (size_t)skip == 2 * bytes && unhex(line + skip, 2 * bytes, p, bytes);
    if (ok)
        lbk_checkpoint_unpack_state(s, p);
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
    const lbk_outputs_shape shape = lbk_checkpoint_shape(s);
    lbk_checkpoint_part_name(s, i, name, sizeof name);
    const bool rows = i < LBK_JOB_OUTPUT_COUNT && s->plan.owns_slice;
    if (rows)
        lbk_outputs_rows_span(s->job, &shape, i, s->query_first,
                              lbk_checkpoint_rows_done(s, s->done_batches), &start, &len);
    if (i == LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS)
        len = lbk_checkpoint_rows_done(s, s->done_batches) *
              (s->values ? sizeof *s->values : sizeof *s->predictions);
    LBK_FAIL_IF(len != s->kept_len[i], LBK_ERR_INPUT,
                "%s: --resume refused: rank %d's %s has %" PRIu64 " bytes in the checkpoint, "
                "not the %" PRIu64 " of its batches",
                ckpt, s->comm->rank, lbk_checkpoint_part_key(i), s->kept_len[i], len);
    LBK_TRY(verify_part(ckpt, s->comm->rank, lbk_checkpoint_part_key(i), name, start, len,
                        s->kept_crc[i]));
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
                    lbk_checkpoint_part_key(i), s->comm->rank);
    for (int i = 0; i < LBK_RUN_PARTS; i++)
        if (s->kept_on[i])
            LBK_TRY(verify_mine(s, ckpt, i));
    return LBK_OK;
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

/* Rank 0: the checkpoint's text, whole and of this run (*text NULL: there
 * is none), and where its progress starts. A missing PATH means none (a
 * finished run removes PATH before PATH.prev, so PATH.prev alone is
 * stale). */
static lbk_status read_checkpoint(lbk_run_state *s, char **text, size_t *len, uint64_t *progress)
{
    const char *ckpt = s->job->run.checkpoint;
    struct stat sb;
    *text = NULL;
    if (stat(ckpt, &sb) != 0 && errno == ENOENT)
        return LBK_OK;
    char prev[LBK_PATH_MAX + 8];
    snprintf(prev, sizeof prev, "%s.prev", ckpt);
    LBK_TRY(read_intact(s, ckpt, prev, text, len));
    const char *at = *text;
    LBK_TRY(compare_identity(s, s->checkpoint_bad ? prev : ckpt, &at));
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
    lbk_checkpoint_plan_parts(s);
    memset(s->kept_cut, 0, sizeof s->kept_cut);
    s->t_checkpoint = lbk_timer_now();
    if (!resume) {
        /* A fresh run: an earlier run's checkpoint no longer describes the
         * partial files it is about to cut. */
        if (s->root)
            lbk_checkpoint_remove_files(s->job);
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
                s->comm->rank, lbk_checkpoint_part_key(LBK_JOB_OUTPUT_COUNT + h));
    lbk_status st = LBK_OK;
    for (uint64_t at = 0; at < len && st == LBK_OK;) {
        const ssize_t n = pread(s->held_fd[h], data + at, (size_t)(len - at), (off_t)at);
        if (n <= 0) {
            lbk_error("rank %d: cannot read its %s back: %s", s->comm->rank,
                      lbk_checkpoint_part_key(LBK_JOB_OUTPUT_COUNT + h),
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
        lbk_checkpoint_part_name(s, i, name, sizeof name);
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
