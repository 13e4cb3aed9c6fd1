/* The parts of a checkpointed run and the checkpoint's identity, shared by
 * its writing (checkpoint.c) and its resuming (checkpoint_resume.c). */
/* stat's st_mtim. */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include "log.h"
#include "row_split.h"
#include "saved.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[] = "lbknn checkpoint 3\n";

static const char *const held_keys[LBK_RUN_HELD_COUNT] = {"held.predictions",
                                                          "held.probabilities", "held.graph"};

/* Part i's key in the checkpoint's "part" lines. */
const char *lbk_checkpoint_part_key(int i)
{
    return i < LBK_JOB_OUTPUT_COUNT ? lbk_outputs_key(i) : held_keys[i - LBK_JOB_OUTPUT_COUNT];
}

const char *lbk_checkpoint_output_path(const lbk_job *job, int i)
{
    const char *const paths[] = {
#define OUTPUT_PATH_(n) job->output.n,
        LBK_JOB_OUTPUT_LIST(OUTPUT_PATH_)
#undef OUTPUT_PATH_
    };
    return paths[i];
}

lbk_outputs_shape lbk_checkpoint_shape(const lbk_run_state *s)
{
    lbk_outputs_shape shape = {s->shape.query_rows, s->classes, s->shape.reference_rows, {0}};
    /* An HDF5 array's rows: after its file's layout, which the file's
     * creation found, or the checkpoint of the run that created it says. */
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++)
        shape.hdf5_offset[i] = s->outputs_open ? lbk_outputs_header_len(&s->outputs, i)
                               : s->resumed    ? s->resumed->hdf5_offset[i]
                                               : 0;
    return shape;
}

bool lbk_checkpoint_is_hdf5(const lbk_run_state *s, int i)
{
    return (lbk_checkpoint_is_output(i, "output.neighbors") ||
            lbk_checkpoint_is_output(i, "output.distances")) &&
           lbk_dataset_array_layout_of(lbk_checkpoint_output_path(s->job, i)) == LBK_ARRAY_HDF5;
}

/* Part i's file on this rank: the output's partial file, or a held part's
 * file of this rank's own, OUT.lbknn-partial.rank-R. */
void lbk_checkpoint_part_name(const lbk_run_state *s, int i, char *buf, size_t size)
{
    if (i < LBK_JOB_OUTPUT_COUNT) {
        lbk_outfile_kept_name(lbk_checkpoint_output_path(s->job, i), buf, size);
        return;
    }
    if (i == LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_GRAPH)
        lbk_checkpoint_graph_name(s, s->done_rows, s->comm->rank, buf, size);
    else
        lbk_checkpoint_held_name(s, i, lbk_checkpoint_stream_id(s), buf, size);
}

void lbk_checkpoint_graph_name(const lbk_run_state *s, uint64_t run, int rank, char *buf,
                               size_t size)
{
    const lbk_job *job = s->job;
    const char *out = job->output.graph[0]       ? job->output.graph
                      : job->output.neighbors[0] ? job->output.neighbors
                                                 : job->output.distances;
    char stem[LBK_PATH_MAX + 32];
    lbk_outfile_kept_name(out, stem, sizeof stem);
    snprintf(buf, size, "%s.graph-%" PRIu64 "-%d", stem, run, rank);
}

void lbk_checkpoint_held_name(const lbk_run_state *s, int i, uint64_t id, char *buf, size_t size)
{
    const bool pred = i - LBK_JOB_OUTPUT_COUNT == LBK_RUN_HELD_PREDICTIONS;
    char stem[LBK_PATH_MAX + 32];
    lbk_outfile_kept_name(pred ? s->job->output.predictions : s->job->output.probabilities, stem,
                          sizeof stem);
    snprintf(buf, size, "%s.row-%" PRIu64, stem, id);
}

uint64_t lbk_checkpoint_stream_id(const lbk_run_state *s)
{
    return lbk_run_rows_global(s, s->query_first, NULL);
}

void lbk_checkpoint_rank_slice(const lbk_run_state *s, int r, uint64_t *first, uint64_t *count)
{
    lbk_row_split_range(s->todo_rows, s->comm->size, r, first, count);
}

bool lbk_checkpoint_crc_bytes(int fd, uint64_t start, uint64_t len, uint32_t *crc)
{
    unsigned char buf[1 << 16];
    for (uint64_t at = 0; at < len;) {
        const uint64_t left = len - at;
        const ssize_t n =
            pread(fd, buf, left < sizeof buf ? left : sizeof buf, (off_t)(start + at));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0) /* end of file: no errno of its own */
                errno = 0;
            return false;
        }
        *crc = lbk_saved_crc32(*crc, buf, (size_t)n);
        at += (uint64_t)n;
    }
    return true;
}

const char *lbk_checkpoint_read_error(void)
{
    return errno ? strerror(errno) : "it ends before the checkpointed bytes";
}

bool lbk_checkpoint_crc_rows(const lbk_run_state *s, int i, int fd, uint64_t first,
                             uint64_t count, uint64_t *skip, uint32_t *crc, uint64_t *len)
{
    const lbk_outputs_shape shape = lbk_checkpoint_shape(s);
    uint64_t at, bytes;
    lbk_outputs_rows_span(s->job, &shape, i, first, count, &at, &bytes);
    if (*skip >= bytes) {
        *skip -= bytes;
        return true;
    }
    if (!lbk_checkpoint_crc_bytes(fd, at + *skip, bytes - *skip, crc))
        return false;
    *len += bytes - *skip;
    *skip = 0;
    return true;
}

bool lbk_checkpoint_is_output(int i, const char *key)
{
    return i < LBK_JOB_OUTPUT_COUNT && strcmp(lbk_outputs_key(i), key) == 0;
}

/* Which parts this rank has. Where rank 0 holds every list, or every rank
 * writes its slice of each batch, every file grows in order as a whole:
 * rank 0 reads it back. Where ranks own slices, each has its rows of the
 * arrays, and holds its text until the end: in held files. */
void lbk_checkpoint_plan_parts(lbk_run_state *s)
{
    const lbk_outputs_shape shape = lbk_checkpoint_shape(s);
    const bool owns = s->plan.owns_slice;
    memset(s->kept_on, 0, sizeof s->kept_on);
    if (s->graph_queries) {
        /* The graph's files are written at the end: its rows are held, by
         * every rank that emits them. */
        s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_GRAPH] = s->plan.sliced || s->root;
        return;
    }
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        uint64_t at, len;
        const bool on = lbk_checkpoint_output_path(s->job, i)[0] != '\0' &&
                        !lbk_checkpoint_is_output(i, "output.report");
        s->kept_on[i] =
            on && (owns ? lbk_outputs_rows_span(s->job, &shape, i, 0, 0, &at, &len) : s->root);
    }
    /* Held files only where this run's slice has rows. */
    const bool rows = owns && s->queries.rows > 0;
    s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS] =
        rows && s->job->output.predictions[0] != '\0';
    s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PROBABILITIES] = rows && s->proba_rows;
}

/* Rows of this rank's owned slice done after `done` batches. */
uint64_t lbk_checkpoint_rows_done(const lbk_run_state *s, uint64_t done)
{
    const uint64_t rows = done * lbk_index_info_of(s->index)->batch;
    return rows < s->queries.rows ? rows : s->queries.rows;
}

/* The job as printed, without the keys a resumed run may change because
 * no output byte depends on them: the run section (interval, time limit),
 * the device section (which devices, their batch, memory, groups,
 * threads), knn.engine (every engine gives the same bytes) and
 * mpi.partition (the checkpoint's is kept). docs/design.md section 16. */
char *lbk_checkpoint_canonical_job(const lbk_job *job, size_t *len)
{
    lbk_job *copy = malloc(sizeof *copy);
    char *text = NULL;
    if (!copy)
        return NULL;
    *copy = *job;
    lbk_job defaults;
    lbk_job_defaults(&defaults);
    copy->run = defaults.run;
    copy->device = defaults.device;
    copy->knn.engine = defaults.knn.engine;
    copy->mpi.partition = defaults.mpi.partition;
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
void lbk_checkpoint_identity_lines(const lbk_run_state *s, uint32_t job_hash, FILE *f)
{
    const lbk_job *job = s->job;
    fprintf(f, "%s", magic);
    fprintf(f, "job_hash %08" PRIx32 "\n", job_hash);
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

static size_t matrix_bytes(const lbk_run_state *s)
{
    const lbk_classify_confusion *c = &s->confusion;
    return c->matrix ? (size_t)c->classes * (size_t)c->classes * sizeof *c->matrix : 0;
}

size_t lbk_checkpoint_state_bytes(const lbk_run_state *s)
{
    return 4 * sizeof(uint64_t) + sizeof s->truth + sizeof s->score + matrix_bytes(s);
}

void lbk_checkpoint_pack_state(const lbk_run_state *s, unsigned char *p)
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

void lbk_checkpoint_unpack_state(lbk_run_state *s, const unsigned char *p)
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

/* As lbk_checkpoint_pack_state's layout: counts, truth, score, matrix. */
void lbk_checkpoint_merge_state(const lbk_run_state *s, unsigned char *dst,
                                const unsigned char *src)
{
    uint64_t a[4], b[4];
    memcpy(a, dst, sizeof a);
    memcpy(b, src, sizeof b);
    for (int i = 0; i < 4; i++)
        a[i] += b[i];
    memcpy(dst, a, sizeof a);
    size_t at = sizeof a;
    lbk_truth_counts ta, tb;
    memcpy(&ta, dst + at, sizeof ta);
    memcpy(&tb, src + at, sizeof tb);
    ta.evaluated += tb.evaluated;
    ta.ids_equal += tb.ids_equal;
    ta.distances_equal += tb.distances_equal;
    ta.distances_exact += tb.distances_exact;
    memcpy(dst + at, &ta, sizeof ta);
    at += sizeof ta;
    lbk_regress_score sa, sb;
    memcpy(&sa, dst + at, sizeof sa);
    memcpy(&sb, src + at, sizeof sb);
    lbk_regress_score_merge(&sa, &sb);
    memcpy(dst + at, &sa, sizeof sa);
    at += sizeof sa;
    const size_t cells = matrix_bytes(s) / sizeof(uint64_t);
    for (size_t c = 0; c < cells; c++) {
        uint64_t x, y;
        memcpy(&x, dst + at + c * sizeof x, sizeof x);
        memcpy(&y, src + at + c * sizeof y, sizeof y);
        x += y;
        memcpy(dst + at + c * sizeof x, &x, sizeof x);
    }
}

void lbk_checkpoint_kept_free(struct lbk_checkpoint_kept *k)
{
    if (!k)
        return;
    for (uint64_t i = 0; i < k->stream_count; i++)
        free(k->streams[i].range);
    free(k->streams);
    free(k->whole.range);
    free(k->graph_files);
    free(k->state);
    free(k);
}

void lbk_checkpoint_remove_files(const lbk_job *job)
{
    char name[LBK_PATH_MAX + 8];
    unlink(job->run.checkpoint);
    snprintf(name, sizeof name, "%s.prev", job->run.checkpoint);
    unlink(name);
    snprintf(name, sizeof name, "%s.tmp", job->run.checkpoint);
    unlink(name);
}
