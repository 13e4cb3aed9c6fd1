#!/bin/bash
# docs/cluster.md's model of the spatial partition, calibrated by its work
# counters (issue 25 item 6): a weak-scaling series, n uniform 3-D points
# and q queries per rank (bench_points, N = nP), P = 1, 2, 4, ... ranks,
# for each K; bench/model_calibration.py sets the measured phase-2 share,
# bytes per query and work per query against the model's. Counts, not
# seconds: one run per cell, oversubscribed, on any machine.
#
#   bench/model_calibration.sh [--n 100000] [--q 10000] [--ranks "1 2 4 8 16"]
#                              [--k "10 16"] [--out DIR]
#
# Reports in DIR (default bench/out/model_calibration/), the table on
# stdout and in DIR/table.md. LBKNN picks the binary (default build/lbknn).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=100000 q=10000 ranks="1 2 4 8 16" ks="10 16" out=$root/bench/out/model_calibration
while [ $# -gt 0 ]; do
    case $1 in
    --n) n=$2; shift ;;
    --q) q=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --k) ks=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--n N] [--q Q] [--ranks \"1 2 4 ...\"] [--k \"10 16\"] [--out DIR]" >&2
       exit 2 ;;
    esac
    shift
done
. "$root/bench/counts_setup.sh"
lbk_require_gen
mkdir -p "$out"
args=()
for k in $ks; do
    reports=()
    for np in $ranks; do
        data=$out/data/p$np
        [ -s "$data/reference.fvecs" ] || "$GEN" "$data" uniform $((n * np)) $((q * np)) >/dev/null
        report=$out/k$k-p$np.yaml
        POCL_MAX_PTHREAD_COUNT=1 mpirun --bind-to none --mca mpi_yield_when_idle 1 \
            -x POCL_MAX_PTHREAD_COUNT -n "$np" "$LBKNN" run --quiet "$data/job.yaml" \
            --set knn.k="$k" --set knn.engine=kdtree --set mpi.partition=spatial \
            --set output.predictions= --set "output.report=$report"
        echo "done: K = $k, P = $np" >&2
        reports+=("$report")
    done
    args+=("$k=$(IFS=,; echo "${reports[*]}")")
done
/usr/bin/python3 "$root/bench/model_calibration.py" "${args[@]}" | tee "$out/table.md"
