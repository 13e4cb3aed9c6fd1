/* Names of the job's enumerations, as they appear in job files and reports. */
#include "config.h"

const char *lbk_metric_name(lbk_metric m)
{
    static const char *const names[] = {"l2", "l1", "linf"};
    return (unsigned)m < 3 ? names[m] : "?";
}

const char *lbk_weights_name(lbk_weights w)
{
    static const char *const names[] = {"uniform", "distance"};
    return (unsigned)w < 2 ? names[w] : "?";
}

const char *lbk_engine_name(lbk_engine e)
{
    static const char *const names[] = {"auto", "kdtree", "brute"};
    return (unsigned)e < 3 ? names[e] : "?";
}

const char *lbk_device_type_name(lbk_device_type t)
{
    static const char *const names[] = {"gpu", "cpu", "any"};
    return (unsigned)t < 3 ? names[t] : "?";
}

const char *lbk_format_name(lbk_format f)
{
    static const char *const names[] = {"auto", "fvecs", "ivecs", "bvecs", "csv", "idx", "text"};
    return (unsigned)f < 7 ? names[f] : "?";
}

const char *lbk_tree_split_name(lbk_tree_split s)
{
    static const char *const names[] = {"round_robin", "widest"};
    return (unsigned)s < 2 ? names[s] : "?";
}

const char *lbk_tree_sort_name(lbk_tree_sort s)
{
    static const char *const names[] = {"auto", "bitonic", "radix"};
    return (unsigned)s < 3 ? names[s] : "?";
}

const char *lbk_merge_mode_name(lbk_merge_mode m)
{
    static const char *const names[] = {"reduce", "reduce_scatter"};
    return (unsigned)m < 2 ? names[m] : "?";
}

const char *lbk_partition_name(lbk_partition p)
{
    static const char *const names[] = {"shard", "replicate"};
    return (unsigned)p < 2 ? names[p] : "?";
}
