#!/bin/bash
# Inside slurm_cluster.sh: one task on each of the nodes, each in its own
# host's namespaces, so three distinct hostnames lbkh1..N.
set -u
: "${LBK_HOSTS:?run inside slurm_cluster.sh}"
got=$(timeout 60 srun --nodes="$LBK_HOSTS" --ntasks-per-node=1 hostname | sort)
want=$(for ((i = 1; i <= LBK_HOSTS; i++)); do echo "lbkh$i"; done)
[ "$got" = "$want" ] || { echo "want hostnames:"; echo "$want"; echo "got:"; echo "$got"; exit 1; }
echo "ok: srun ran on $(echo $got)"
