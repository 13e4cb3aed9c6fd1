/* The job's broadcast, apart from comm.h so that what uses the
 * communicator without knowing jobs (the index) does not reach job.h. */
#ifndef LBK_COMM_JOB_H
#define LBK_COMM_JOB_H

#include "comm.h"
#include "job.h"

/* Rank 0's job to every rank. */
lbk_status lbk_comm_bcast_job(const lbk_comm *comm, lbk_job *job);

#endif
