#include "status.h"

int lbk_status_exit_code(lbk_status status)
{
    switch (status) {
#define LBK_STATUS_CODE_(constant, name, exit_code, public_code)                                 \
    case constant: return exit_code;
        LBK_STATUS_LIST(LBK_STATUS_SKIP_PUBLIC, LBK_STATUS_CODE_)
#undef LBK_STATUS_CODE_
    }
    return 1;
}

const char *lbk_status_name(lbk_status status)
{
    switch (status) {
#define LBK_STATUS_NAME_(constant, name, exit_code, public_code)                                 \
    case constant: return name;
        LBK_STATUS_LIST(LBK_STATUS_SKIP_PUBLIC, LBK_STATUS_NAME_)
#undef LBK_STATUS_NAME_
    }
    return "unknown";
}

lbk_status lbk_status_remote(lbk_status cause)
{
    return lbk_status_exit_code(cause) == lbk_status_exit_code(LBK_ERR_REMOTE_INPUT)
               ? LBK_ERR_REMOTE_INPUT
               : LBK_ERR_REMOTE;
}

bool lbk_status_is_remote(lbk_status status)
{
    return status == LBK_ERR_REMOTE || status == LBK_ERR_REMOTE_INPUT;
}
