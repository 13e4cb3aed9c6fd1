#include "classes.h"

#include "try.h"

int32_t lbk_classes_max_label(const int32_t *labels, uint64_t n)
{
    int32_t m = -1;
    for (uint64_t i = 0; labels && i < n; i++)
        m = labels[i] > m ? labels[i] : m;
    return m;
}

lbk_status lbk_classes_count(const lbk_comm *comm, const int32_t *labels, uint64_t n,
                             int32_t *classes)
{
    int32_t m = lbk_classes_max_label(labels, n);
    LBK_TRY(lbk_comm_allreduce_i32(comm, &m, LBK_REDUCE_MAX));
    *classes = m + 1;
    return LBK_OK;
}
