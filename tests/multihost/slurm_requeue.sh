#!/bin/bash
# usage: slurm_requeue.sh LBKNN VERIFY SBATCH_SCRIPT NODES QUERIES
# Inside slurm_cluster.sh: tests/slurm/requeue.sh's MODE nodes on the
# multi-node SLURM: jobs/long-run.sbatch on NODES nodes (one task each),
# stopped with a checkpoint, requeued and resumed on one node, outputs
# byte-identical to a one-shot run and equal to the oracle.
set -u
: "${SLURM_CONF:?run inside slurm_cluster.sh}"
# The job's files in the shared directory (TMPDIR here), which every host
# sees; the ranks' TMPDIR is their host's own /tmp (job-env).
export LBK_SLURM_DIR=$TMPDIR
source "$(dirname "$SLURM_CONF")/job-env"
exec bash "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../slurm/requeue.sh" "$1" "$2" "$3" "$4" \
    nodes "$5"
