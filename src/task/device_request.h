/* The device a job asks for, as lbk_device_open takes it: one place for
 * both of the device's clients (`lbknn run` and the library's context). */
#ifndef LBK_DEVICE_REQUEST_H
#define LBK_DEVICE_REQUEST_H

#include "device.h"
#include "job.h"

/* device.type, device.list and device.threads, for the node-local rank
 * `local_rank` (the request borrows job's list). */
lbk_device_request lbk_device_request_from_job(const lbk_job *job, int local_rank);

#endif
