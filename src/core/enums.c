#include "enums.h"

#include <stdio.h>
#include <string.h>

#define LBK_ENUM_ITEM_(constant, name) {name, constant},
#define LBK_ENUM_CASE_(constant, name)                                                           \
    case constant:                                                                               \
        return name;
#define LBK_ENUM_DEFINE_(type, list)                                                             \
    const lbk_enum_item type##_items[] = {list(LBK_ENUM_ITEM_){NULL, 0}};                        \
    const char *type##_name(type value)                                                          \
    {                                                                                            \
        switch (value) {                                                                         \
            list(LBK_ENUM_CASE_)                                                                 \
        }                                                                                        \
        return "?";                                                                              \
    }                                                                                            \
    bool type##_parse(const char *name, type *out)                                               \
    {                                                                                            \
        const lbk_enum_item *it = lbk_enum_find_name(type##_items, name);                        \
        if (!it)                                                                                 \
            return false;                                                                        \
        *out = (type)it->value;                                                                  \
        return true;                                                                             \
    }

LBK_ENUM_DEFINE_(lbk_metric, LBK_METRIC_LIST)
LBK_ENUM_DEFINE_(lbk_weights, LBK_WEIGHTS_LIST)
LBK_ENUM_DEFINE_(lbk_engine, LBK_ENGINE_LIST)
LBK_ENUM_DEFINE_(lbk_device_type, LBK_DEVICE_TYPE_LIST)
LBK_ENUM_DEFINE_(lbk_format, LBK_FORMAT_LIST)
LBK_ENUM_DEFINE_(lbk_tree_split, LBK_TREE_SPLIT_LIST)
LBK_ENUM_DEFINE_(lbk_tree_sort, LBK_TREE_SORT_LIST)
LBK_ENUM_DEFINE_(lbk_merge_mode, LBK_MERGE_MODE_LIST)
LBK_ENUM_DEFINE_(lbk_partition, LBK_PARTITION_LIST)
LBK_ENUM_DEFINE_(lbk_balance, LBK_BALANCE_LIST)
LBK_ENUM_DEFINE_(lbk_overflow, LBK_OVERFLOW_LIST)
LBK_ENUM_DEFINE_(lbk_task, LBK_TASK_LIST)
LBK_ENUM_DEFINE_(lbk_dtype, LBK_DTYPE_LIST)

void lbk_enum_join(const lbk_enum_item *items, const char *sep, const char *last_sep, char *buf,
                   unsigned size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const lbk_enum_item *it = items; it->name && used < size; it++) {
        const char *before = it == items ? "" : it[1].name ? sep : last_sep;
        int n = snprintf(buf + used, size - used, "%s%s", before, it->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

void lbk_enum_join_names_last(const lbk_enum_item *items, const char *last_sep, char *buf,
                              unsigned size)
{
    lbk_enum_join(items, ", ", last_sep, buf, size);
}

void lbk_enum_join_names(const lbk_enum_item *items, char *buf, unsigned size)
{
    lbk_enum_join_names_last(items, ", ", buf, size);
}

const lbk_enum_item *lbk_enum_find_name(const lbk_enum_item *items, const char *name)
{
    for (const lbk_enum_item *it = items; it->name; it++)
        if (strcmp(it->name, name) == 0)
            return it;
    return NULL;
}

const lbk_enum_item *lbk_enum_find_value(const lbk_enum_item *items, int value)
{
    for (const lbk_enum_item *it = items; it->name; it++)
        if (it->value == value)
            return it;
    return NULL;
}
