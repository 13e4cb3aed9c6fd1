#!/bin/bash
# The spatial partition on data sets that stress it (tests/spatial/spatial_data.c:
# ties on every plane, one repeated point, far-apart clusters, queries far
# outside every box).
#
# usage: spatial_case.sh compare LBKNN MPIEXEC NP DATA_BIN KIND [run args...]
#            NP ranks byte-identical to one rank (compare_ranks.sh)
#        spatial_case.sh oracle LBKNN MPIEXEC NP DATA_BIN KIND VERIFY K METRIC WEIGHTS
#                        [run args...]
#            NP ranks under mpi.partition=spatial, every neighbour, distance
#            and prediction checked against the independent host oracle
#            (tests/e2e/verify_outputs)
set -u
mode=$1 lbknn=$2 mpiexec=$3 np=$4 data_bin=$5 kind=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-spatial.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$data_bin" "$dir/data" "$kind" || { echo "spatial_data failed"; exit 1; }

if [ "$mode" = compare ]; then
    exec bash "$here/compare_ranks.sh" "$lbknn" "$mpiexec" "$np" "$dir/data/job.yaml" "$@"
fi

verify=$1 k=$2 metric=$3 weights=$4
shift 4
out=$dir/out
mkdir "$out"
"$mpiexec" -n "$np" "$lbknn" run --quiet "$dir/data/job.yaml" --set mpi.partition=spatial \
    --set knn.k="$k" --set knn.metric="$metric" --set knn.weights="$weights" "$@" \
    --set output.predictions="$out/p.csv" --set output.neighbors="$out/n.ivecs" \
    --set output.distances="$out/d.fvecs" --set output.report="$out/r.yaml" ||
    { echo "$np-rank run failed"; exit 1; }
grep -q '^partition: {name: spatial,' "$out/r.yaml" || { echo "the run was not spatial"; exit 1; }
"$verify" outputs "$dir/data" "$k" "$metric" "$weights" "$out/p.csv" "$out/n.ivecs" "$out/d.fvecs"
