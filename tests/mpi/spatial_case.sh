#!/bin/bash
# The spatial partition on data sets that stress it (tests/spatial/spatial_data.c:
# ties on every plane, one repeated point, far-apart clusters, queries far
# outside every box).
#
# usage: spatial_case.sh compare LBKNN MPIEXEC VERIFY NP DATA_BIN KIND [run args...]
#            NP ranks byte-identical to one rank, and against the oracle
#            (compare_ranks.sh)
#        spatial_case.sh oracle LBKNN MPIEXEC VERIFY NP DATA_BIN KIND K METRIC WEIGHTS
#                        [run args...]
#            NP ranks under mpi.partition=spatial, every neighbour, distance,
#            prediction and probability and the report's accuracy checked
#            against the independent host oracle (tests/e2e/verify_outputs)
set -u
mode=$1 lbknn=$2 mpiexec=$3 verify=$4 np=$5 data_bin=$6 kind=$7
shift 7
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-spatial.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$data_bin" "$dir/data" "$kind" || { echo "spatial_data failed"; exit 1; }

if [ "$mode" = compare ]; then
    bash "$here/compare_ranks.sh" "$lbknn" "$mpiexec" "$verify" "$np" "$dir/data/job.yaml" "$@"
    exit
fi

k=$1 metric=$2 weights=$3
shift 3
out=$dir/out
mkdir "$out"
"$mpiexec" -n "$np" "$lbknn" run --quiet "$dir/data/job.yaml" --set mpi.partition=spatial \
    --set knn.k="$k" --set knn.metric="$metric" --set knn.weights="$weights" "$@" \
    --set output.predictions="$out/p.csv" --set output.probabilities="$out/pr.csv" \
    --set output.neighbors="$out/n.ivecs" --set output.distances="$out/d.fvecs" \
    --set output.report="$out/r.yaml" ||
    { echo "$np-rank run failed"; exit 1; }
grep -q '^partition: {name: spatial,' "$out/r.yaml" || { echo "the run was not spatial"; exit 1; }
"$verify" outputs "$dir/data" "$k" "$metric" "$weights" "$out/p.csv" "$out/n.ivecs" "$out/d.fvecs" \
    "probabilities=$out/pr.csv" "report=$out/r.yaml"
