#include "fnv.h"

uint64_t lbk_fnv_update(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(1099511628211);
    return h;
}
