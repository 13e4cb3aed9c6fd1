#!/bin/bash
# task: graph (issue 23) against SciPy cKDTree, side by side in one run
# (bench/graph_peers.py): 1e6 uniform and clustered 3-D points (bench_points),
# K = 16, lbknn end to end against cKDTree build + query(k=17, workers=2);
# then, unless --no-memory, 1e7 uniform points at P = 1 and 2: each rank's
# peak memory above the process baseline. Run from the repository root after
# building (the machine otherwise idle):
#   bash bench/graph.sh [BUILD_DIR] [--rounds N (5)] [--no-memory]
# Data in bench/out/graph/; copy the tables into bench/RESULTS.md.
set -euo pipefail
. "$(dirname "$0")/peers.sh"
lbk_install python3-yaml
lbk_mpi_env
lbk_pocl_cache_env
build=build rounds=5 memory=1
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    --no-memory) memory=0 ;;
    *) build=$1 ;;
    esac
    shift
done
build=$(cd "$build" && pwd)
out=bench/out/graph
for kind in uniform clustered; do
    [ -s $out/$kind/reference.fvecs ] || "$build/bench/bench_points" $out/$kind $kind 1000000 1 3 >/dev/null
done
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
lbk_peers_describe
/usr/bin/python3 "$(dirname "$0")/graph_peers.py" time "$build/lbknn" $out "$rounds"
if [ $memory = 1 ]; then
    [ -s $out/big/reference.fvecs ] || "$build/bench/bench_points" $out/big uniform 10000000 1 3 >/dev/null
    /usr/bin/python3 "$(dirname "$0")/graph_peers.py" memory "$build/lbknn" mpirun $out
fi
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
