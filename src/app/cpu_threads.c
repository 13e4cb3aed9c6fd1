#include "cpu_threads.h"

const char *lbk_cpu_threads_source_name(lbk_cpu_threads_source source)
{
    switch (source) {
    case LBK_CPU_THREADS_DEVICE_DEFAULT: return "device default";
    case LBK_CPU_THREADS_ENVIRONMENT: return "environment";
    case LBK_CPU_THREADS_NODE_SHARE: return "node share";
    }
    return "?";
}
