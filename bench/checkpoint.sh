#!/bin/bash
# Checkpoint overhead: the search phase (report `search:`) of one job
# without checkpoints, with run.checkpoint at the default interval (900 s:
# only the per-batch agreement) and at run.checkpoint_s: 1 (a checkpoint
# every second: sync and CRC of what the second wrote). Best of REPS each.
# Usage: bench/checkpoint.sh LBKNN [REPS] [--set ...]
bin=${1:?usage: bench/checkpoint.sh LBKNN [REPS] [--set ...]}
reps=${2:-3}
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
job=(--set synthetic.points=200000 --set synthetic.queries=400000 --set synthetic.dim=8
     --set device.batch=4000 --set mpi.partition=shard --set output.predictions=p.csv
     --set output.probabilities=pr.csv --set output.neighbors=n.npy --set output.distances=d.fvecs
     --set output.report=r.yaml "$@")
best() {
    local b=""
    for _ in $(seq "$reps"); do
        "$bin" run -q "${job[@]}" "$@" || exit 1
        local t
        t=$(awk '$1 == "search:" {print $2}' r.yaml)
        b=$(awk -v a="$b" -v t="$t" 'BEGIN {print (a == "" || t < a) ? t : a}')
    done
    echo "$b"
}
base=$(best)
dflt=$(best --set run.checkpoint=ck)
one=$(best --set run.checkpoint=ck --set run.checkpoint_s=1)
awk -v b="$base" -v d="$dflt" -v o="$one" 'BEGIN {
    printf "search s: none %.3f  default(900 s) %.3f (%+.1f%%)  checkpoint_s=1 %.3f (%+.1f%%)\n",
        b, d, 100 * (d - b) / b, o, 100 * (o - b) / b }'
