/* The job: everything a run needs, parsed from a YAML job file (libyaml
 * document API) and --set overrides, validated once on rank 0 and then
 * broadcast as a plain struct (no pointers inside, so MPI_Bcast of the bytes
 * is enough). */
#ifndef LBK_JOB_H
#define LBK_JOB_H

#include "bounds.h"
#include "enums.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LBK_JOB_MAX_DEVICE_LIST 64

/* The result files a job may ask for, by their key in the job's `output`
 * section (also the member of lbk_job.output holding the path; empty = not
 * wanted). Every list of outputs (schema, checks, writers, report) comes
 * from this one. */
#define LBK_JOB_OUTPUT_LIST(X)                                                                   \
    X(predictions) X(probabilities) X(neighbors) X(distances) X(graph) X(report)
#define LBK_JOB_OUTPUT_COUNT_(name) +1
enum { LBK_JOB_OUTPUT_COUNT = 0 LBK_JOB_OUTPUT_LIST(LBK_JOB_OUTPUT_COUNT_) };
#undef LBK_JOB_OUTPUT_COUNT_

/* The formats a points file and a label file may be given as (subsets of
 * lbk_format_items, AUTO first, in the order messages list them). */
extern const lbk_enum_item lbk_job_points_formats[];
extern const lbk_enum_item lbk_job_labels_formats[];

/* One data source: points, and labels (targets, for task regress) either in
 * a separate file or as a CSV column of the points file. An empty path
 * means "not given". */
typedef struct {
    char path[LBK_PATH_MAX];
    lbk_format format;
    char labels[LBK_PATH_MAX];
    lbk_format labels_format;
    int label_column;           /* CSV: 0-based column holding the label; -1 = none */
    char targets[LBK_PATH_MAX]; /* task regress: one float per point (.npy, .txt, .fvecs) */
    int target_column;          /* CSV: 0-based column holding the target; -1 = none */
    char delimiter;             /* CSV: ',' by default */
    int header;                 /* CSV: -1 auto-detect, 0 no header, 1 header */
    char dataset[LBK_NAME_MAX]; /* HDF5: the points' dataset ("train"; "" = not given) */
    char labels_dataset[LBK_NAME_MAX]; /* HDF5 labels file: the labels' dataset */
    lbk_dtype type; /* reference.type: the width the points are kept at (the query set's
                     * is always FLOAT32: queries are read widened) */
} lbk_job_input_spec;

/* A search's ground truth: the true neighbour ids (and distances) of every
 * query, as HDF5 datasets (ann-benchmarks' `neighbors` and `distances`);
 * the job file's keys query.neighbors, query.distances and their
 * *_dataset. Empty paths: none. */
typedef struct {
    char neighbors[LBK_PATH_MAX];
    char neighbors_dataset[LBK_NAME_MAX];
    char distances[LBK_PATH_MAX];
    char distances_dataset[LBK_NAME_MAX];
} lbk_job_truth_spec;

/* The built-in data set used when reference.path is not given: seeded
 * Gaussian blobs, generated row by row so any shard can make its own rows. */
typedef struct {
    uint64_t points;  /* reference rows */
    uint64_t queries; /* query rows (drawn from the same blobs) */
    int dim;
    int classes;
    uint64_t seed;
    double spread; /* per-coordinate standard deviation of a blob (centres in [0, 6.25)^dim) */
} lbk_job_synthetic_spec;

typedef struct {
    char source[LBK_PATH_MAX]; /* job file path, or "<built-in default>" */
    lbk_task task;             /* the one top-level key */

    lbk_job_input_spec reference;
    lbk_job_input_spec query;
    lbk_job_truth_spec truth; /* keys of the query section */
    lbk_job_synthetic_spec synthetic;

    struct {
        int k;
        lbk_metric metric;
        lbk_weights weights;
        lbk_engine engine;
        double temperature; /* softmax weights exp(similarity / temperature) */
        /* One radius for every query, or NaN: none given (printed `none`).
         * Task radius, radius_graph: lbk_job_radius; task classify and
         * regress: a number here is the radius votes (lbk_job_radius_votes). */
        double radius;
        /* task classify with knn.radius: "none", "most_frequent" or a label
         * (lbk_job_outlier_label) */
        char outlier_label[LBK_NAME_MAX];
    } knn;

    /* Task radius and radius_graph (docs/design.md "Radius search"). */
    struct {
        char radii[LBK_PATH_MAX]; /* query.radii: one radius per query ("" = knn.radius) */
        uint64_t max_neighbors;   /* 0 = no cap */
        lbk_overflow overflow;
        bool count_only;
        char counts[LBK_PATH_MAX]; /* output.counts: each query's count (.npy int64) */
        /* output.truncated: 1 where a query's list was cut at max_neighbors
         * (.npy bool, one a query) */
        char truncated[LBK_PATH_MAX];
    } radius;

    struct {
        lbk_device_type type;
        uint64_t batch;                    /* queries per batch; 0 = from memory budget */
        int groups;                        /* brute: bubble groups G per query; 0 = default */
        uint64_t memory_mb;                /* device memory budget; 0 = from the device */
        int list[LBK_JOB_MAX_DEVICE_LIST]; /* explicit device indices, per local rank */
        int list_len;
        int threads; /* a CPU device's compute units: 0 = all, < 0 = all but -threads - 1 */
    } device;

    struct {
        lbk_tree_split split;
        lbk_tree_sort sort;
        bool verify;
    } tree;

    /* The device's kernel parameters (src/engines/tuning.h): results never
     * depend on them. 0 = from `lbknn tune`'s cache (when `cache` and it
     * holds this device) or derived from the device. */
    struct {
        bool cache;
        int lanes;
        int block_queries;
        int block_vectors;
        int tile_blocks;
        int slice;
        int segment_log2;
    } tuning;

    struct {
        lbk_merge_mode merge;
        lbk_partition partition;
        lbk_balance balance;
    } mpi;

    /* A saved index (`lbknn build`): the directory it is written to and
     * loaded from instead of the reference set ("" = none), and whether a
     * run rebuilds and saves it where it does not match the job. */
    struct {
        char path[LBK_PATH_MAX];
        bool rebuild;
    } index;
    /* Checkpoints (src/app/checkpoint.h): the file ("" = none), seconds
     * between two, and the hours after which a run stops with one. */
    struct {
        char checkpoint[LBK_PATH_MAX];
        uint64_t checkpoint_s;
        double max_hours;
    } run;

    struct {
#define LBK_JOB_OUTPUT_FIELD_(name) char name[LBK_PATH_MAX];
        LBK_JOB_OUTPUT_LIST(LBK_JOB_OUTPUT_FIELD_)
#undef LBK_JOB_OUTPUT_FIELD_
    } output;
} lbk_job;

/* The tasks whose queries are the reference points themselves (graph,
 * radius_graph): no query set. */
static inline bool lbk_job_self_search(const lbk_job *job)
{
    return job->task == LBK_TASK_GRAPH || job->task == LBK_TASK_RADIUS_GRAPH;
}

/* The radius tasks (radius, radius_graph). */
static inline bool lbk_job_radius_task(const lbk_job *job)
{
    return job->task == LBK_TASK_RADIUS || job->task == LBK_TASK_RADIUS_GRAPH;
}

/* Task classify and regress by radius (knn.radius a number, or
 * query.radii; knn.k is then not read): every neighbour within the radius
 * votes (docs/design.md "Radius search"). */
static inline bool lbk_job_radius_votes(const lbk_job *job)
{
    return (job->task == LBK_TASK_CLASSIFY || job->task == LBK_TASK_REGRESS) &&
           (job->knn.radius == job->knn.radius /* not NaN */ || job->radius.radii[0]);
}

/* The radius of the radius tasks: knn.radius, or scikit-learn's
 * NearestNeighbors(radius=1.0) where none is given. */
static inline double lbk_job_radius(const lbk_job *job)
{
    return job->knn.radius == job->knn.radius ? job->knn.radius : 1.0;
}

/* knn.outlier_label as a label: LBK_JOB_OUTLIER_NONE, _MOST_FREQUENT or a
 * label >= 0; false where the text is none of them. */
enum { LBK_JOB_OUTLIER_NONE = -1, LBK_JOB_OUTLIER_MOST_FREQUENT = -2 };
bool lbk_job_outlier_label(const lbk_job *job, int32_t *label);

/* The built-in default job: synthetic data, K = 5, L2, uniform, auto engine,
 * any device type preferring GPUs, no output files. */
void lbk_job_defaults(lbk_job *job);

/* Parse a YAML job file over the defaults (the job is reset first). Every
 * error is logged once as "FILE:LINE:COL: what is wrong" and returns
 * LBK_ERR_CONFIG; the cross-key rules of lbk_job_validate are applied to the
 * file too, with positions. Relative input paths (reference.*, query.*)
 * become absolute against the job file's directory; relative output paths
 * are kept, i.e. relative to the working directory. */
lbk_status lbk_job_load(const char *path, lbk_job *job);

/* Apply one "--set section.key=value" override, with the same validation as
 * the file; errors name the override: "--set knn.k=0: ...". The value is a
 * YAML scalar (or flow sequence for device.list); paths are taken literally
 * and kept relative to the working directory. On error the job is unchanged. */
lbk_status lbk_job_set(lbk_job *job, const char *assignment);
/* The same for a library's options (lbknn.h): errors read "option ASSIGN:
 * ...". */
lbk_status lbk_job_set_option(lbk_job *job, const char *assignment);

/* Every per-key range again plus the cross-key rules (query.path needs
 * reference.path and vice versa, label_column needs CSV, predictions and
 * probabilities need reference labels, synthetic classes <= points, the k-d
 * tree takes neither cosine/ip nor K above LBK_TREE_K_MAX, distance weights
 * need a distance: not ip). Call after load and all overrides; errors read
 * "SOURCE: what is wrong". */
lbk_status lbk_job_validate(const lbk_job *job);

/* A YAML double-quoted scalar that any YAML reader accepts, whatever the
 * bytes of s (shared by the job printer and the run report). */
void lbk_job_print_string(FILE *f, const char *s);

/* Write the job back as YAML, every key, each line prefixed by `indent`
 * spaces (used in the report and by `check`). Loading the output gives the
 * same job as long as its input paths are absolute (as loaded ones are). */
void lbk_job_print(const lbk_job *job, void *file /* FILE* */, int indent);

/* `lbknn keys`: "section.key VALUES" a line, every key in schema order;
 * VALUES is one word, the names an enumeration takes joined by '|'
 * ("l2|l1|linf|cosine|ip", "true|false") or a kind ("1..4096", "PATH"). */
void lbk_job_print_keys(FILE *f);

/* "knn.k, knn.metric, device.*": the keys `names` ("section.key",
 * NULL-terminated) joined in their order, a section whose every key is
 * among them written once as "section.*"; for the messages that say which
 * keys a caller takes. */
void lbk_job_join_names(const char *const *names, char *buf, size_t size);

#endif
