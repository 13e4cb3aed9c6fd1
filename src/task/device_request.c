#include "device_request.h"

lbk_device_request lbk_device_request_from_job(const lbk_job *job, int local_rank)
{
    return (lbk_device_request){.type = job->device.type,
                                .local_rank = local_rank,
                                .list = job->device.list,
                                .list_len = job->device.list_len,
                                .threads = job->device.threads};
}
