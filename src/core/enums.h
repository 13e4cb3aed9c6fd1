/* The job's enumerations. Each is one X-macro list (constant, name as written
 * in job files and reports); the enum, its name table and its parser are all
 * generated from that list, so they cannot disagree. */
#ifndef LBK_ENUMS_H
#define LBK_ENUMS_H

#include <stdbool.h>

/* COSINE: 1 - cos on rows normalised once on the host; IP: inner product,
 * the largest dot products are the nearest (src/core/knn.h). */
#define LBK_METRIC_LIST(X)                                                                       \
    X(LBK_METRIC_L2, "l2")                                                                       \
    X(LBK_METRIC_L1, "l1")                                                                       \
    X(LBK_METRIC_LINF, "linf")                                                                   \
    X(LBK_METRIC_COSINE, "cosine")                                                               \
    X(LBK_METRIC_IP, "ip")

/* SOFTMAX: exp(similarity / knn.temperature) (src/core/classify.h). */
#define LBK_WEIGHTS_LIST(X)                                                                      \
    X(LBK_WEIGHTS_UNIFORM, "uniform")                                                            \
    X(LBK_WEIGHTS_DISTANCE, "distance")                                                          \
    X(LBK_WEIGHTS_SOFTMAX, "softmax")

#define LBK_ENGINE_LIST(X)                                                                       \
    X(LBK_ENGINE_AUTO, "auto")                                                                   \
    X(LBK_ENGINE_KDTREE, "kdtree")                                                               \
    X(LBK_ENGINE_BRUTE, "brute")

#define LBK_DEVICE_TYPE_LIST(X)                                                                  \
    X(LBK_DEVICE_GPU, "gpu")                                                                     \
    X(LBK_DEVICE_CPU, "cpu")                                                                     \
    X(LBK_DEVICE_ANY, "any")

/* AUTO: from the file name's extension; IDX: MNIST-style, plain or .gz;
 * TEXT: labels only, one integer per line; NPY: NumPy arrays; FBIN, U8BIN,
 * I8BIN, IBIN: big-ann-benchmarks files (uint32 rows, uint32 dim, values);
 * HDF5: one named dataset of an HDF5 file (ann-benchmarks' layout). */
#define LBK_FORMAT_LIST(X)                                                                       \
    X(LBK_FORMAT_AUTO, "auto")                                                                   \
    X(LBK_FORMAT_FVECS, "fvecs")                                                                 \
    X(LBK_FORMAT_IVECS, "ivecs")                                                                 \
    X(LBK_FORMAT_BVECS, "bvecs")                                                                 \
    X(LBK_FORMAT_CSV, "csv")                                                                     \
    X(LBK_FORMAT_IDX, "idx")                                                                     \
    X(LBK_FORMAT_TEXT, "text")                                                                   \
    X(LBK_FORMAT_NPY, "npy")                                                                     \
    X(LBK_FORMAT_FBIN, "fbin")                                                                   \
    X(LBK_FORMAT_U8BIN, "u8bin")                                                                 \
    X(LBK_FORMAT_I8BIN, "i8bin")                                                                 \
    X(LBK_FORMAT_IBIN, "ibin")                                                                   \
    X(LBK_FORMAT_HDF5, "hdf5")

#define LBK_TREE_SPLIT_LIST(X)                                                                   \
    X(LBK_SPLIT_ROUND_ROBIN, "round_robin")                                                      \
    X(LBK_SPLIT_WIDEST, "widest")

/* SELECT: a quickselect per node (CPU devices, round-robin split). */
#define LBK_TREE_SORT_LIST(X)                                                                    \
    X(LBK_SORT_AUTO, "auto")                                                                     \
    X(LBK_SORT_BITONIC, "bitonic")                                                               \
    X(LBK_SORT_RADIX, "radix")                                                                   \
    X(LBK_SORT_SELECT, "select")

#define LBK_MERGE_MODE_LIST(X)                                                                   \
    X(LBK_MERGE_REDUCE, "reduce")                                                                \
    X(LBK_MERGE_REDUCE_SCATTER, "reduce_scatter")

/* auto: spatial for the k-d tree engine with more than one rank, shard
 * otherwise (resolved once the engine is known);
 * shard: rank r holds rows [r*N/P, (r+1)*N/P) and the K-lists are merged;
 * replicate: every rank holds all rows and answers a slice of the queries;
 * spatial: the rows are redistributed so that rank r owns one box of a
 * global k-d split, and each query visits only the ranks whose boxes can
 * hold its neighbours. */
#define LBK_PARTITION_LIST(X)                                                                    \
    X(LBK_PARTITION_AUTO, "auto")                                                                \
    X(LBK_PARTITION_SHARD, "shard")                                                              \
    X(LBK_PARTITION_REPLICATE, "replicate")                                                      \
    X(LBK_PARTITION_SPATIAL, "spatial")

/* The spatial partition's planes: points: every rank gets its share of
 * the reference points; queries: its share of an estimate of the query
 * phase's work, from this run's queries (docs/design.md section 9). */
#define LBK_BALANCE_LIST(X)                                                                      \
    X(LBK_BALANCE_POINTS, "points")                                                              \
    X(LBK_BALANCE_QUERIES, "queries")

/* What a job computes from the K-lists: classify (votes of reference
 * labels), regress (averaged reference targets), search (the lists only),
 * graph (the reference set's own kNN graph, each point's K nearest other
 * points; no query set), radius (every reference point within a radius of
 * each query), radius_graph (the reference set's own radius graph). */
#define LBK_TASK_LIST(X)                                                                         \
    X(LBK_TASK_CLASSIFY, "classify")                                                             \
    X(LBK_TASK_REGRESS, "regress")                                                               \
    X(LBK_TASK_SEARCH, "search")                                                                 \
    X(LBK_TASK_GRAPH, "graph")                                                                   \
    X(LBK_TASK_RADIUS, "radius")                                                                 \
    X(LBK_TASK_RADIUS_GRAPH, "radius_graph")

/* A radius search's list over radius.max_neighbors: the run fails naming
 * the query (error), or the list keeps its first max_neighbors, flagged
 * (truncate). */
#define LBK_OVERFLOW_LIST(X)                                                                     \
    X(LBK_OVERFLOW_ERROR, "error")                                                               \
    X(LBK_OVERFLOW_TRUNCATE, "truncate")

/* The width reference points are kept at (reference.type): auto is the
 * file's own type; float32 widens every file (exactly for the others);
 * uint8, int8 and float16 keep a file of that type at its width
 * (docs/design.md "Compact reference points"). FLOAT32 is 0, what a zeroed
 * dataset holds. */
#define LBK_DTYPE_LIST(X)                                                                        \
    X(LBK_DTYPE_FLOAT32, "float32")                                                              \
    X(LBK_DTYPE_AUTO, "auto")                                                                    \
    X(LBK_DTYPE_UINT8, "uint8")                                                                  \
    X(LBK_DTYPE_INT8, "int8")                                                                    \
    X(LBK_DTYPE_FLOAT16, "float16")

/* One enumeration in the job's table form: for schema walkers and messages
 * that list the allowed names. Terminated by a NULL name. */
typedef struct {
    const char *name;
    int value;
} lbk_enum_item;

#define LBK_ENUM_CONSTANT_(constant, name) constant,
#define LBK_ENUM_DECLARE_(type, list)                                                            \
    typedef enum { list(LBK_ENUM_CONSTANT_) } type;                                              \
    extern const lbk_enum_item type##_items[];                                                   \
    /* "?" for a value outside the list */                                                       \
    const char *type##_name(type value);                                                         \
    /* false (and *out unchanged) when name is not in the list */                                \
    bool type##_parse(const char *name, type *out);

LBK_ENUM_DECLARE_(lbk_metric, LBK_METRIC_LIST)
LBK_ENUM_DECLARE_(lbk_weights, LBK_WEIGHTS_LIST)
LBK_ENUM_DECLARE_(lbk_engine, LBK_ENGINE_LIST)
LBK_ENUM_DECLARE_(lbk_device_type, LBK_DEVICE_TYPE_LIST)
LBK_ENUM_DECLARE_(lbk_format, LBK_FORMAT_LIST)
LBK_ENUM_DECLARE_(lbk_tree_split, LBK_TREE_SPLIT_LIST)
LBK_ENUM_DECLARE_(lbk_tree_sort, LBK_TREE_SORT_LIST)
LBK_ENUM_DECLARE_(lbk_merge_mode, LBK_MERGE_MODE_LIST)
LBK_ENUM_DECLARE_(lbk_partition, LBK_PARTITION_LIST)
LBK_ENUM_DECLARE_(lbk_balance, LBK_BALANCE_LIST)
LBK_ENUM_DECLARE_(lbk_task, LBK_TASK_LIST)
LBK_ENUM_DECLARE_(lbk_overflow, LBK_OVERFLOW_LIST)
LBK_ENUM_DECLARE_(lbk_dtype, LBK_DTYPE_LIST)

/* "a, b, c": the names of a NULL-terminated item table, for error messages
 * that tell the fix. Truncated to size. */
void lbk_enum_join_names(const lbk_enum_item *items, char *buf, unsigned size);
/* The same with the last two names joined by last_sep: "a, b or c". */
void lbk_enum_join_names_last(const lbk_enum_item *items, const char *last_sep, char *buf,
                              unsigned size);
/* The same with sep between the others: "a|b|c". */
void lbk_enum_join(const lbk_enum_item *items, const char *sep, const char *last_sep, char *buf,
                   unsigned size);

/* The item of a NULL-terminated table (a whole enumeration's or a subset of
 * it) with this name or value; NULL when the table has none. */
const lbk_enum_item *lbk_enum_find_name(const lbk_enum_item *items, const char *name);
const lbk_enum_item *lbk_enum_find_value(const lbk_enum_item *items, int value);

#endif
