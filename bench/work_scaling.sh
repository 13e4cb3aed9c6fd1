#!/bin/bash
# Scaling of the spatial partition measured by work, not seconds: the
# report's work counters (rank_stats: distance_evals, nodes_visited) for
# P = 1, 2, 4, 8, 16 ranks on bench_points files, and from them
#   work-efficiency(P) = work(P = 1) / (P x max over ranks of work(P))
#   imbalance(P)       = max / mean over ranks of work(P)
# (docs/cluster.md). The counts do not depend on the machine, its load or
# the ranks' placement, so one run per P is enough and oversubscription is
# fine (mpirun --bind-to none, one PoCL thread a rank); the seconds in the
# reports are not the point here.
#
#   bench/work_scaling.sh [--quick] [--data uniform|clustered|skewed|both|all]
#                         [--ranks "1 2 4 8 16"]
#                         [--out DIR] [--set key=value ...]
#
# Default: 1e6 uniform and 1e6 clustered 3-D references, 1e5 queries from
# the same distribution (bench_points; clustered: 64 blobs of sigma 0.01,
# queries in the same blobs), K = 16, k-d tree, mpi.partition: spatial at
# every P (P = 1 counts the same as the one-rank shard). skewed (in all,
# not in both): the clustered references with every query from 4 of the 64
# blobs, the load-balance case (mpi.balance). --quick: 1e5 and
# 1e4. --set: more job keys for every run (e.g. tree.split=widest). Reports
# in DIR (default bench/out/work_scaling/), the table on stdout and in
# DIR/table.md. LBKNN picks the binary (default
# build/lbknn).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pts=1000000 qs=100000 data=both ranks="1 2 4 8 16" out=$root/bench/out/work_scaling
extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --quick) pts=100000 qs=10000 ;;
    --data) data=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --out) out=$2; shift ;;
    --set) extra+=(--set "$2"); shift ;;
    *) echo "usage: $0 [--quick] [--data uniform|clustered|skewed|both|all] [--ranks \"1 2 4 8 16\"] [--out DIR] [--set key=value ...]" >&2
       exit 2 ;;
    esac
    shift
done
. "$root/bench/counts_setup.sh"
lbk_require_gen
mkdir -p "$out/data"
rm -f "$out"/*.yaml
case $data in both) kinds="uniform clustered" ;; all) kinds="uniform clustered skewed" ;;
uniform | clustered | skewed) kinds=$data ;;
*) echo "--data: uniform, clustered, skewed, both or all" >&2; exit 2 ;; esac
reports=()
for kind in $kinds; do
    "$GEN" "$out/data/$kind" "$kind" "$pts" "$qs" >/dev/null
    for np in $ranks; do
        report=$out/$kind-p$np.yaml
        # A waiting rank yields its core: 16 ranks share two.
        POCL_MAX_PTHREAD_COUNT=1 mpirun --bind-to none --mca mpi_yield_when_idle 1 \
            -x POCL_MAX_PTHREAD_COUNT -n "$np" "$LBKNN" run --quiet "$out/data/$kind/job.yaml" \
            --set knn.k=16 --set knn.engine=kdtree --set mpi.partition=spatial \
            --set output.predictions= ${extra[@]+"${extra[@]}"} --set "output.report=$report"
        echo "done: $kind P = $np" >&2
        reports+=("$kind=$report")
    done
done
/usr/bin/python3 "$root/bench/work_scaling.py" "${reports[@]}" | tee "$out/table.md"
