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

/* Bytes [start, start + len) of part `key` of the rows from `id` in `name`
 * have this CRC (one line naming the part and the file if not). */
static lbk_status verify_part(const char *ckpt, uint64_t id, const char *key, const char *name,
                              uint64_t start, uint64_t len, uint32_t crc)
{
    struct stat sb;
    LBK_FAIL_IF(stat(name, &sb) != 0, LBK_ERR_INPUT,
                "%s: --resume refused: the %s partial file %s of the rows from %" PRIu64
                " is missing",
                ckpt, key, name, id);
    LBK_FAIL_IF(S_ISDIR(sb.st_mode), LBK_ERR_INPUT,
                "%s: --resume refused: cannot read the %s partial file %s of the rows from "
                "%" PRIu64 ": %s",
                ckpt, key, name, id, strerror(EISDIR));
    LBK_FAIL_IF((uint64_t)sb.st_size < start + len, LBK_ERR_INPUT,
                "%s: --resume refused: the %s partial file %s of the rows from %" PRIu64
                " has %lld bytes, fewer than the checkpointed %" PRIu64,
                ckpt, key, name, id, (long long)sb.st_size, start + len);
    const int fd = open(name, O_RDONLY | O_CLOEXEC);
    LBK_FAIL_IF(fd < 0, LBK_ERR_IO, "%s: cannot open %s: %s", ckpt, name, strerror(errno));
    uint32_t c = 0;
    const bool read = lbk_checkpoint_crc_bytes(fd, start, len, &c);
    const char *why = read ? "" : lbk_checkpoint_read_error();
    close(fd);
    LBK_FAIL_IF(!read, LBK_ERR_INPUT,
                "%s: --resume refused: cannot read the %s partial file %s of the rows from "
                "%" PRIu64 ": %s",
                ckpt, key, name, id, why);
    LBK_FAIL_IF(c != crc, LBK_ERR_INPUT,
                "%s: --resume refused: the %s partial file %s of the rows from %" PRIu64
                " differs from the checkpointed one in bytes %" PRIu64 " to %" PRIu64
                " (CRC-32 %08" PRIx32 ", checkpoint %08" PRIx32 ")",
                ckpt, key, name, id, start, start + len, c, crc);
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
        if (strncmp(b, "lbknn checkpoint ", 17) == 0 && strncmp(a, b, 17) == 0) {
            lbk_error("%s: --resume refused: the checkpoint is of format %.*s, written by an "
                      "older lbknn; this one reads format %.*s (finish the run with that "
                      "version, or start afresh without --resume)",
                      ckpt, (int)b_len - 17, b + 17, (int)a_len - 17, a + 17);
            st = LBK_ERR_INPUT;
            break;
        }
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

/* Rank 0: the output partial file that exists (named into `name`), if any. */
static bool any_partial(const lbk_run_state *s, char *name, size_t size)
{
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        if (!lbk_checkpoint_output_path(s->job, i)[0] ||
            lbk_checkpoint_is_output(i, "output.report"))
            continue;
        lbk_checkpoint_part_name(s, i, name, size);
        if (access(name, F_OK) == 0)
            return true;
    }
    return false;
}

/* "stream ID RANGES FIRST COUNT ...": a new stream of k's. */
static bool parse_stream(struct lbk_checkpoint_kept *k, const char *line)
{
    int skip = 0;
    uint64_t id, n;
    if (sscanf(line, "stream %" SCNu64 " %" SCNu64 "%n", &id, &n, &skip) != 2 || n > (1u << 24))
        return false;
    lbk_checkpoint_stream *grown = realloc(k->streams, (k->stream_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    k->streams = grown;
    lbk_checkpoint_stream *m = &grown[k->stream_count++];
    memset(m, 0, sizeof *m);
    m->id = id;
    m->range = malloc((n + 1) * sizeof *m->range);
    if (!m->range)
        return false;
    line += skip;
    for (; m->ranges < n; m->ranges++) {
        lbk_run_range *r = &m->range[m->ranges];
        if (sscanf(line, " %" SCNu64 " %" SCNu64 "%n", &r->first, &r->count, &skip) != 2)
            return false;
        line += skip;
    }
    return true;
}

/* "part ID KEY LENGTH CRC": a part of the last stream. */
static bool parse_part(struct lbk_checkpoint_kept *k, const char *line)
{
    uint64_t id, len;
    uint32_t crc;
    char key[64];
    if (k->stream_count == 0 ||
        sscanf(line, "part %" SCNu64 " %63s %" SCNu64 " %" SCNx32, &id, key, &len, &crc) != 4)
        return false;
    lbk_checkpoint_stream *m = &k->streams[k->stream_count - 1];
    for (int i = 0; i < LBK_RUN_PARTS; i++)
        if (id == m->id && strcmp(key, lbk_checkpoint_part_key(i)) == 0) {
            m->on[i] = true;
            m->len[i] = len;
            m->crc[i] = crc;
            return true;
        }
    return false;
}

/* "graphfile RUN RANK LENGTH CRC": a graph run's held rows. */
static bool parse_graph_file(struct lbk_checkpoint_kept *k, const char *line)
{
    lbk_checkpoint_graph_file g;
    if (sscanf(line, "graphfile %" SCNu64 " %d %" SCNu64 " %" SCNx32, &g.run, &g.rank, &g.len,
               &g.crc) != 4)
        return false;
    lbk_checkpoint_graph_file *grown =
        realloc(k->graph_files, (k->graph_file_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    k->graph_files = grown;
    grown[k->graph_file_count++] = g;
    return true;
}

static bool parse_state(struct lbk_checkpoint_kept *k, const char *line, size_t len)
{
    if (strncmp(line, "state ", 6) != 0 || (len - 6) % 2 != 0)
        return false;
    k->state_bytes = (len - 6) / 2;
    k->state = malloc(k->state_bytes + 1);
    return k->state && unhex(line + 6, len - 6, k->state, k->state_bytes);
}

/* Every rank: the checkpoint past its identity, into k. */
static bool parse_progress(struct lbk_checkpoint_kept *k, const char *at)
{
    size_t len;
    const char *line = next_line(&at, &len);
    bool ok = sscanf(line, "partition %d", &k->partition) == 1;
    k->points = LBK_DTYPE_FLOAT32;
    if (ok && strncmp(at, "points ", 7) == 0) {
        char name[32] = "";
        line = next_line(&at, &len);
        ok = len - 7 < sizeof name;
        if (ok)
            memcpy(name, line + 7, len - 7);
        ok = ok && lbk_dtype_parse(name, &k->points) && k->points != LBK_DTYPE_AUTO;
    }
    while (ok && strncmp(at, "hdf5 ", 5) == 0) {
        char key[64];
        uint64_t offset;
        ok = sscanf(next_line(&at, &len), "hdf5 %63s %" SCNu64, key, &offset) == 2;
        for (int i = 0; ok && i < LBK_JOB_OUTPUT_COUNT; i++)
            if (strcmp(key, lbk_checkpoint_part_key(i)) == 0)
                k->hdf5_offset[i] = offset;
    }
    ok = ok && sscanf(next_line(&at, &len), "done %" SCNu64, &k->done) == 1;
    while (ok && *at && strncmp(at, "job ", 4) != 0) {
        line = next_line(&at, &len);
        if (strncmp(line, "stream ", 7) == 0)
            ok = parse_stream(k, line);
        else if (strncmp(line, "part ", 5) == 0)
            ok = parse_part(k, line);
        else if (strncmp(line, "graphfile ", 10) == 0)
            ok = parse_graph_file(k, line);
        else if (strncmp(line, "text_offset ", 12) == 0)
            ok = sscanf(line, "text_offset %" SCNu64, &k->text_offset) == 1;
        else if (strncmp(line, "proba_offset ", 13) == 0)
            ok = sscanf(line, "proba_offset %" SCNu64, &k->proba_offset) == 1;
        else
            ok = parse_state(k, line, len);
    }
    return ok && k->state;
}

static int by_first(const void *a, const void *b)
{
    const lbk_run_range *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Every rank: the rows the checkpoint finished (its streams' ranges, which
 * must not overlap, nor pass the query count, and add up to its count)
 * leave the rest to search. */
static lbk_status finished_rows(lbk_run_state *s, const char *ckpt)
{
    const struct lbk_checkpoint_kept *k = s->resumed;
    uint64_t n = 0, rows = 0;
    for (uint64_t i = 0; i < k->stream_count; i++)
        n += k->streams[i].ranges;
    lbk_run_range *all = malloc((n + 1) * sizeof *all);
    LBK_FAIL_IF(!all, LBK_ERR_NOMEM, "rank %d: out of host memory reading the checkpoint",
                s->comm->rank);
    n = 0;
    for (uint64_t i = 0; i < k->stream_count; i++)
        for (uint64_t r = 0; r < k->streams[i].ranges; r++)
            all[n++] = k->streams[i].range[r];
    qsort(all, n, sizeof *all, by_first);
    bool ok = true;
    for (uint64_t i = 0; i < n; i++) {
        /* count <= rows - first: a crafted first + count must not wrap. */
        ok = ok && all[i].count > 0 && all[i].first < s->shape.query_rows &&
             all[i].count <= s->shape.query_rows - all[i].first &&
             (i == 0 || all[i - 1].first + all[i - 1].count <= all[i].first);
        rows += all[i].count;
    }
    lbk_status st = ok && rows == k->done ? lbk_run_rows_set(s, all, n) : LBK_ERR_INPUT;
    free(all);
    LBK_FAIL_IF(!ok || rows != k->done, LBK_ERR_INPUT,
                "%s: --resume refused: the checkpoint's finished rows overlap or do not add up",
                ckpt);
    s->done_rows = rows;
    return st;
}

lbk_status lbk_checkpoint_read(lbk_run_state *s, bool resume)
{
    const char *ckpt = s->job->run.checkpoint;
    char name[LBK_PATH_MAX + 64];
    s->t_checkpoint = lbk_timer_now();
    s->t_resume = s->t_checkpoint;
    if (!resume) {
        /* A fresh run: an earlier run's checkpoint no longer describes the
         * partial files it is about to cut. */
        if (s->root)
            lbk_checkpoint_remove_files(s->job);
        return lbk_comm_agree(s->comm, lbk_run_rows_set(s, NULL, 0));
    }
    char *text = NULL;
    uint64_t progress = 0;
    lbk_status st = share_checkpoint(s, &text, &progress);
    if (st != LBK_OK) {
        free(text);
        return st;
    }
    if (!text && s->root && any_partial(s, name, sizeof name)) {
        lbk_error("%s: --resume refused: the partial file %s exists but no checkpoint does", ckpt,
                  name);
        st = LBK_ERR_INPUT;
    }
    if (text) {
        s->resumed = calloc(1, sizeof *s->resumed);
        st = s->resumed ? LBK_OK : LBK_ERR_NOMEM;
        if (st == LBK_OK && !parse_progress(s->resumed, text + progress)) {
            lbk_error("%s: --resume refused: the checkpoint's progress lines are unreadable",
                      ckpt);
            st = LBK_ERR_INPUT;
        }
        if (st == LBK_OK)
            st = finished_rows(s, ckpt);
        if (st == LBK_OK) /* the plan keeps the checkpoint's partition */
            s->index_params.partition = (lbk_partition)s->resumed->partition;
        s->resume_s = lbk_timer_now() - s->t_resume;
    } else if (st == LBK_OK) {
        st = lbk_run_rows_set(s, NULL, 0);
        if (s->root)
            lbk_info("%s: no checkpoint and no partial files: starting from the first batch",
                     ckpt);
    }
    free(text);
    return lbk_comm_agree(s->comm, st);
}

/* Stream m's part i: its rows of an array output, or its held file. */
static lbk_status verify_stream_part(const lbk_run_state *s, const char *ckpt,
                                     const lbk_checkpoint_stream *m, int i)
{
    char name[LBK_PATH_MAX + 64];
    const char *key = lbk_checkpoint_part_key(i);
    if (i >= LBK_JOB_OUTPUT_COUNT) {
        lbk_checkpoint_held_name(s, i, m->id, name, sizeof name);
        return verify_part(ckpt, m->id, key, name, 0, m->len[i], m->crc[i]);
    }
    lbk_checkpoint_part_name(s, i, name, sizeof name);
    const int fd = open(name, O_RDONLY | O_CLOEXEC);
    LBK_FAIL_IF(fd < 0, LBK_ERR_INPUT,
                "%s: --resume refused: the %s partial file %s of the rows from %" PRIu64
                " is missing",
                ckpt, key, name, m->id);
    uint64_t skip = 0, len = 0;
    uint32_t crc = 0;
    bool read = true;
    for (uint64_t r = 0; r < m->ranges && read; r++)
        read = lbk_checkpoint_crc_rows(s, i, fd, m->range[r].first, m->range[r].count, &skip,
                                       &crc, &len);
    const char *why = read ? "" : lbk_checkpoint_read_error();
    close(fd);
    LBK_FAIL_IF(!read, LBK_ERR_INPUT,
                "%s: --resume refused: cannot read the %s partial file %s in the rows from "
                "%" PRIu64 ": %s",
                ckpt, key, name, m->id, why);
    LBK_FAIL_IF(len != m->len[i] || crc != m->crc[i], LBK_ERR_INPUT,
                "%s: --resume refused: the %s partial file %s differs in the rows from %" PRIu64
                " (%" PRIu64 " bytes, CRC-32 %08" PRIx32 "; checkpoint %" PRIu64 ", %08" PRIx32
                ")",
                ckpt, key, name, m->id, len, crc, m->len[i], m->crc[i]);
    return LBK_OK;
}

/* Rank 0, a plan that does not own slices: the checkpoint's one stream
 * (rows 0 .. done - 1) is of whole files, each checked and cut back to its
 * length when opened. */
static lbk_status restore_whole(lbk_run_state *s, const char *ckpt)
{
    struct lbk_checkpoint_kept *k = s->resumed;
    char name[LBK_PATH_MAX + 64];
    LBK_FAIL_IF(
        k->stream_count > 1 || (k->stream_count == 1 && k->streams[0].range[0].first != 0),
        LBK_ERR_INPUT,
        "%s: --resume refused: the checkpoint's rows are not a prefix of the queries", ckpt);
    if (k->stream_count == 1) {
        k->whole = k->streams[0];
        k->stream_count = 0;
        k->streams[0].range = NULL;
    }
    s->outputs.text_offset = k->text_offset;
    s->outputs.proba_offset = k->proba_offset;
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT && s->root; i++) {
        if (!s->kept_on[i])
            continue;
        LBK_FAIL_IF(!k->whole.on[i], LBK_ERR_INPUT,
                    "%s: --resume refused: the checkpoint names no %s", ckpt,
                    lbk_checkpoint_part_key(i));
        lbk_checkpoint_part_name(s, i, name, sizeof name);
        const bool hdf5 = lbk_checkpoint_is_hdf5(s, i);
        if (hdf5) /* its rows so far; the file kept as libhdf5 laid it out */
            LBK_TRY(verify_stream_part(s, ckpt, &k->whole, i));
        else
            LBK_TRY(verify_part(ckpt, 0, lbk_checkpoint_part_key(i), name, 0, k->whole.len[i],
                                k->whole.crc[i]));
        s->kept_len[i] = k->whole.len[i];
        s->kept_crc[i] = k->whole.crc[i];
        s->kept_cut[i] = hdf5 ? LBK_OUTFILE_KEEP_LENGTH : k->whole.len[i];
    }
    return LBK_OK;
}

/* A plan that owns slices: the checkpoint's streams, spread over the
 * ranks to check (each names what it has: the same job writes the same
 * parts); arrays are opened as they are (bytes past the finished rows are
 * written again). */
static lbk_status restore_streams(lbk_run_state *s, const char *ckpt)
{
    const struct lbk_checkpoint_kept *k = s->resumed;
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        s->kept_cut[i] = LBK_OUTFILE_KEEP_LENGTH;
    for (uint64_t m = (uint64_t)s->comm->rank; m < k->stream_count; m += (uint64_t)s->comm->size)
        for (int i = 0; i < LBK_RUN_PARTS; i++)
            if (k->streams[m].on[i])
                LBK_TRY(verify_stream_part(s, ckpt, &k->streams[m], i));
    return LBK_OK;
}

lbk_status lbk_checkpoint_restore(lbk_run_state *s, bool resume)
{
    const char *ckpt = s->job->run.checkpoint;
    const double t = lbk_timer_now();
    (void)resume;
    lbk_checkpoint_plan_parts(s);
    memset(s->kept_cut, 0, sizeof s->kept_cut);
    if (!s->resumed)
        return LBK_OK;
    const struct lbk_checkpoint_kept *k = s->resumed;
    memcpy(s->kept_hdf5_offset, k->hdf5_offset, sizeof s->kept_hdf5_offset);
    lbk_status st = LBK_OK;
    const lbk_dtype points = lbk_index_points_type(s->index);
    if (k->points != points) {
        /* Every rank has both types: each refuses, rank 0 says so. */
        if (s->root)
            lbk_error("%s: --resume refused: the checkpointed run searched %s reference points, "
                      "this one searches them as %s (resume with the checkpoint's knn.engine "
                      "and device)",
                      ckpt, lbk_dtype_name(k->points), lbk_dtype_name(points));
        st = LBK_ERR_INPUT;
    } else if (k->state_bytes != lbk_checkpoint_state_bytes(s)) {
        lbk_error("%s: --resume refused: the checkpoint's scores are unreadable", ckpt);
        st = LBK_ERR_INPUT;
    } else if (s->root) {
        lbk_checkpoint_unpack_state(s, k->state);
    }
    if (st == LBK_OK)
        st = s->plan.owns_slice ? restore_streams(s, ckpt) : restore_whole(s, ckpt);
    /* A graph's held rows, spread over the ranks to check. */
    char name[LBK_PATH_MAX + 64];
    for (uint64_t m = (uint64_t)s->comm->rank; st == LBK_OK && m < k->graph_file_count;
         m += (uint64_t)s->comm->size) {
        const lbk_checkpoint_graph_file *g = &k->graph_files[m];
        lbk_checkpoint_graph_name(s, g->run, g->rank, name, sizeof name);
        st = verify_part(ckpt, g->run, "held.graph", name, 0, g->len, g->crc);
    }
    LBK_TRY(lbk_comm_agree(s->comm, st));
    /* What the resume cost: reading the checkpoint and checking every part
     * (bench/resume.sh's figure; the index is built in between). */
    s->resume_s += lbk_timer_now() - t;
    if (s->root)
        lbk_info("%s: resuming with %" PRIu64 " of %" PRIu64 " queries done, on %d rank%s "
                 "(checkpoint read and checked in %.3f s)",
                 ckpt, s->done_rows, s->shape.query_rows, s->comm->size,
                 s->comm->size == 1 ? "" : "s", s->resume_s);
    return LBK_OK;
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
        s->held_fd[h] = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        LBK_FAIL_IF(s->held_fd[h] < 0, LBK_ERR_IO, "rank %d: cannot create its held file %s: %s",
                    s->comm->rank, name, strerror(errno));
        s->held_written[h] = 0;
    }
    return LBK_OK;
}
