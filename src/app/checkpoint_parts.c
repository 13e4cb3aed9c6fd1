/* The parts of a checkpointed run and the checkpoint's identity, shared by
 * its writing (checkpoint.c) and its resuming (checkpoint_resume.c). */
/* stat's st_mtim. */
#define _GNU_SOURCE
#include "checkpoint_impl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[] = "lbknn checkpoint 2\n";

static const char *const held_keys[LBK_RUN_HELD_COUNT] = {"held.predictions",
                                                          "held.probabilities"};

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
    const lbk_outputs_shape shape = {s->shape.query_rows, s->classes, s->shape.reference_rows};
    return shape;
}

/* Part i's file on this rank: the output's partial file, or a held part's
 * file of this rank's own, OUT.lbknn-partial.rank-R. */
void lbk_checkpoint_part_name(const lbk_run_state *s, int i, char *buf, size_t size)
{
    if (i < LBK_JOB_OUTPUT_COUNT) {
        lbk_outfile_kept_name(lbk_checkpoint_output_path(s->job, i), buf, size);
        return;
    }
    const bool pred = i - LBK_JOB_OUTPUT_COUNT == LBK_RUN_HELD_PREDICTIONS;
    char stem[LBK_PATH_MAX + 32];
    lbk_outfile_kept_name(pred ? s->job->output.predictions : s->job->output.probabilities, stem,
                          sizeof stem);
    snprintf(buf, size, "%s.rank-%d", stem, s->comm->rank);
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
    for (int i = 0; i < LBK_JOB_OUTPUT_COUNT; i++) {
        uint64_t at, len;
        const bool on = lbk_checkpoint_output_path(s->job, i)[0] != '\0' &&
                        !lbk_checkpoint_is_output(i, "output.report");
        s->kept_on[i] =
            on && (owns ? lbk_outputs_rows_span(s->job, &shape, i, 0, 0, &at, &len) : s->root);
    }
    s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PREDICTIONS] =
        owns && s->job->output.predictions[0] != '\0';
    s->kept_on[LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_PROBABILITIES] = owns && s->proba_rows;
}

/* Rows of this rank's owned slice done after `done` batches. */
uint64_t lbk_checkpoint_rows_done(const lbk_run_state *s, uint64_t done)
{
    const uint64_t rows = done * lbk_index_info_of(s->index)->batch;
    return rows < s->queries.rows ? rows : s->queries.rows;
}

/* The job as printed, without the run section (a resumed run may change
 * its interval and time limit). */
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

void lbk_checkpoint_remove_files(const lbk_job *job)
{
    char name[LBK_PATH_MAX + 8];
    unlink(job->run.checkpoint);
    snprintf(name, sizeof name, "%s.prev", job->run.checkpoint);
    unlink(name);
    snprintf(name, sizeof name, "%s.tmp", job->run.checkpoint);
    unlink(name);
}
