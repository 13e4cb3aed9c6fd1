#!/bin/bash
# A saved index (issue 24, item 5): loading one of 1e7 uniform 3-D points
# (`lbknn build`, index.path) against reading the points and building the
# k-d tree, at P = 1 and 2 (mpi.partition: auto, so row shards at 1 and
# the spatial partition at 2); `other` loads the index the other rank count
# saved (issue 43: its parts regrouped and built again, the reference file
# not read). The setup is the report's read + build phases (timings_s)
# (max over ranks; `device` is the same in all and left out); the query set
# is 1000 points so that its reading is noise. Each number is the best of
# ROUNDS runs. Target: load <= 0.3 x.
#   bash bench/saved_index.sh [BUILD_DIR] [--rounds N (3)]
# Data and indexes in bench/out/saved_index/ (about 0.7 GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../scripts/common.sh"
lbk_mpi_env
lbk_pocl_cache_env
build=build rounds=3
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    *) build=$1 ;;
    esac
    shift
done
build=$(cd "$build" && pwd)
out=bench/out/saved_index
mkdir -p $out
[ -s $out/data/reference.fvecs ] ||
    "$build/bench/bench_points" $out/data uniform 10000000 1000 3 >/dev/null
job=$out/data/job.yaml
common=(--set knn.k=16 --set knn.engine=kdtree --set output.neighbors=$out/n.ivecs)

# The read and build phases' max over ranks, from the report's timings_s.
setup() { # REPORT
    local rd bd
    rd=$(sed -n 's/^  read: {.*max: \([0-9.]*\)}$/\1/p' "$1")
    bd=$(sed -n 's/^  build: {.*max: \([0-9.]*\)}$/\1/p' "$1")
    echo "$rd $bd"
}

best() { # the smallest sum of the two numbers over the rounds' lines
    sort -t' ' -k3 -g | head -n 1
}

echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
printf '%-3s %-7s %8s %8s %8s\n' P mode read_s build_s setup_s
for np in 1 2; do
    mpirun -n $np "$build/lbknn" build --quiet "$job" "${common[@]}" \
        --set index.path=$out/index.p$np
done
for np in 1 2; do
    for mode in plain load other; do
        extra=()
        [ $mode = load ] && extra=(--set index.path=$out/index.p$np)
        [ $mode = other ] && extra=(--set index.path=$out/index.p$((3 - np)))
        for ((i = 0; i < rounds; i++)); do
            mpirun -n $np "$build/lbknn" run --quiet "$job" "${common[@]}" \
                "${extra[@]}" --set output.report=$out/r.yaml
            read -r rd bd < <(setup $out/r.yaml)
            awk -v a="$rd" -v b="$bd" 'BEGIN { printf "%.3f %.3f %.3f\n", a, b, a + b }'
        done | best | { read -r rd bd sum; printf '%-3s %-7s %8s %8s %8s\n' $np $mode $rd $bd $sum; }
        cp $out/n.ivecs $out/n.$mode.p$np.ivecs
    done
    cmp $out/n.plain.p$np.ivecs $out/n.load.p$np.ivecs &&
        cmp $out/n.plain.p$np.ivecs $out/n.other.p$np.ivecs && echo "# P=$np: neighbours identical"
done
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
