/* Private to the job layer: the schema of a job file. One table describes
 * every key (section, name, kind, where it lives in lbk_job, its range);
 * loading, --set, the checks and the printer all walk it, so they cannot
 * disagree about what a key means. job_schema.c is the only place that
 * lists the keys. */
#ifndef LBK_JOB_SCHEMA_H
#define LBK_JOB_SCHEMA_H

#include "job.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sections of a job file, in the order they are printed. Each section
 * is also the lbk_job member that holds its keys. */
#define LBK_JOB_SECTION_LIST(X)                                                                  \
    X(REFERENCE, reference)                                                                      \
    X(QUERY, query)                                                                              \
    X(SYNTHETIC, synthetic)                                                                      \
    X(KNN, knn)                                                                                  \
    X(DEVICE, device)                                                                            \
    X(TREE, tree)                                                                                \
    X(TUNING, tuning)                                                                            \
    X(MPI, mpi)                                                                                  \
    X(INDEX, index)                                                                              \
    X(RUN, run)                                                                                  \
    X(RADIUS, radius)                                                                            \
    X(OUTPUT, output)

#define LBK_JOB_SEC_CONSTANT_(constant, member) LBK_SEC_##constant,
enum { LBK_JOB_SECTION_LIST(LBK_JOB_SEC_CONSTANT_) LBK_SEC_COUNT };
#undef LBK_JOB_SEC_CONSTANT_

/* The pseudo-section of the keys that stand at the top level of a job
 * file, outside any section (task); never in lbk_job_sections. */
enum { LBK_SEC_TOP = -1 };

/* The section names as an item table (value = section), NULL-terminated. */
extern const lbk_enum_item lbk_job_sections[];

typedef enum {
    LBK_KEY_INT,      /* int field, range [min, max] */
    LBK_KEY_U64,      /* uint64_t field, range [min, max] (min >= 0) */
    LBK_KEY_DOUBLE,   /* double field, positive and finite */
    LBK_KEY_REAL,     /* double field, finite (the rules on its sign are the cross checks') */
    LBK_KEY_BOOL,     /* bool field */
    LBK_KEY_ENUM,     /* enum field, names in items */
    LBK_KEY_HEADER,   /* int field: auto/true/false -> -1/1/0 */
    LBK_KEY_CHAR,     /* char field: exactly one character */
    LBK_KEY_IN_PATH,  /* data file: relative paths resolve against the job file */
    LBK_KEY_OUT_PATH, /* output file: relative paths stay relative to the cwd */
    LBK_KEY_NAME,     /* char[LBK_NAME_MAX]: a name inside a file (an HDF5 dataset) */
    LBK_KEY_DEV_LIST  /* device.list + device.list_len */
} lbk_job_key_kind;

typedef struct {
    int section;
    const char *name;
    lbk_job_key_kind kind;
    size_t offset;
    int64_t min, max;
    const lbk_enum_item *items; /* LBK_KEY_ENUM: terminated by a NULL name */
} lbk_job_key_desc;

/* The keys in print order (grouped by section); a parse records one mark
 * per key, so the table has a fixed upper bound. */
enum { LBK_JOB_MAX_KEYS = 96 };
extern const lbk_job_key_desc lbk_job_keys[];
extern const int lbk_job_key_count;

/* The key's index, or -1: by section and name, or by the address of the
 * field it is stored in (for rules written against lbk_job's members). */
int lbk_job_find_key(int section, const char *name);
int lbk_job_key_at(const lbk_job *job, const void *field);

void *lbk_job_key_field(lbk_job *job, const lbk_job_key_desc *d);
const void *lbk_job_key_cfield(const lbk_job *job, const lbk_job_key_desc *d);
bool lbk_job_key_is_path(const lbk_job_key_desc *d);

/* "section.key", as messages name a key. */
void lbk_job_key_name(const lbk_job_key_desc *d, char *buf, size_t size);
/* "a, b, c": the keys of one section, for messages that should tell the fix. */
void lbk_job_join_keys(int section, char *buf, size_t size);

#endif
