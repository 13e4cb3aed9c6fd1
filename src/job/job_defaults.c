/* The built-in default job: what a key is when neither the job file nor
 * --set gives it. configs/default.yaml documents these values (a test keeps
 * the two equal). */
#include "job.h"

#include <math.h>
#include <string.h>

static void input_defaults(lbk_job_input_spec *in)
{
    in->format = LBK_FORMAT_AUTO;
    in->labels_format = LBK_FORMAT_AUTO;
    in->label_column = -1;
    in->target_column = -1;
    in->delimiter = ',';
    in->header = -1;
}

void lbk_job_defaults(lbk_job *job)
{
    memset(job, 0, sizeof *job);
    snprintf(job->source, sizeof job->source, "%s", "<built-in default>");
    input_defaults(&job->reference);
    snprintf(job->truth.neighbors_dataset, sizeof job->truth.neighbors_dataset, "neighbors");
    snprintf(job->truth.distances_dataset, sizeof job->truth.distances_dataset, "distances");
    input_defaults(&job->query);
    job->reference.type = LBK_DTYPE_AUTO;
    job->query.type = LBK_DTYPE_FLOAT32;
    job->synthetic.points = 100000;
    job->synthetic.queries = 10000;
    job->synthetic.dim = 16;
    job->synthetic.classes = 10;
    job->synthetic.seed = 42;
    job->synthetic.spread = 2.0;
    job->knn.k = 5;
    job->knn.metric = LBK_METRIC_L2;
    job->knn.weights = LBK_WEIGHTS_UNIFORM;
    job->knn.engine = LBK_ENGINE_AUTO;
    job->knn.radius = NAN; /* none given: 1 for task radius (lbk_job_radius) */
    snprintf(job->knn.outlier_label, sizeof job->knn.outlier_label, "none");
    job->knn.temperature = 0.07; /* DINO's and instance discrimination's kNN evaluation */
    job->device.type = LBK_DEVICE_ANY;
    job->tree.split = LBK_SPLIT_ROUND_ROBIN;
    job->tree.sort = LBK_SORT_AUTO;
    job->tree.verify = false;
    job->tuning.cache = true;
    job->mpi.merge = LBK_MERGE_REDUCE;
    job->mpi.partition = LBK_PARTITION_AUTO;
    job->mpi.balance = LBK_BALANCE_POINTS;
    job->run.checkpoint_s = 900; /* GROMACS's -cpt 15 */
    job->run.max_hours = 1e9;    /* no limit */
}
