#!/bin/bash
# Two builds of lbknn on the benchmark workloads, every output written
# (neighbours, distances, predictions, probabilities) and compared byte for
# byte: a change that must not change a result (a refactoring) shows it here.
#
#   bash bench/same_outputs.sh OLD_BUILD NEW_BUILD
#
#   fashion   Fashion-MNIST, K = 5, L2 (configs/fashion-mnist.yaml), brute force
#   fashion-cosine   the same with metric cosine (the prefilter's paths)
#   blobs64   100k x 64-d blobs, 10k queries, K = 16, brute force (the
#             PBKNN setting's dimension: the L2 cascade and prefilter)
#   tree      1e6 uniform 3-D points, 1e5 queries, K = 16, k-d tree
#   spatial   the tree job at P = 2 (mpirun; spatial partition)
#   default   the built-in default job
#
# One table on stdout; the outputs in bench/out/same/. Exit 1 if any differ.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: $0 OLD_BUILD NEW_BUILD" >&2; exit 2; }
builds=("$(cd "$1" && pwd)" "$(cd "$2" && pwd)")
cd "$root" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$root/bench/out/same
mkdir -p "$out"
export XDG_CACHE_HOME=$out/cache
fashion=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
d=$out/uniform-1e6
[ -s "$d/reference.fvecs" ] ||
    "${builds[1]}/bench/bench_points" "$d" uniform 1000000 100000 3 >/dev/null
[ -s "$out/blobs64/reference.fvecs" ] || "${builds[1]}/lbknn" generate "$out/blobs64" \
    --points 100000 --queries 10000 --dim 64 --classes 10 --seed 7 >/dev/null

# run BUILD_INDEX WORKLOAD ARGS...: one run writing every output to
# $out/WORKLOAD-{old,new}.*
run() {
    local i=$1 w=$2; shift 2
    local p=$out/$w-$([ "$i" = 0 ] && echo old || echo new)
    rm -f "$p".*
    ${LAUNCH:-} "${builds[$i]}/lbknn" run "$@" --quiet --set output.report= \
        --set output.neighbors="$p.ivecs" --set output.distances="$p.fvecs" \
        --set output.predictions="$p.csv" --set output.probabilities="$p.proba.csv"
}
status=0
echo "| workload | outputs | bytes | identical |"
echo "|---|---|---|---|"
compare() { # WORKLOAD ARGS...
    local w=$1; shift
    for i in 0 1; do
        run "$i" "$w" "$@" >/dev/null || { echo "| $w | run failed | | no |"; status=1; return; }
    done
    local same=yes n=0 bytes=0
    for ext in ivecs fvecs csv proba.csv; do
        [ -e "$out/$w-old.$ext" ] || continue
        n=$((n + 1))
        bytes=$((bytes + $(stat -c %s "$out/$w-old.$ext")))
        cmp -s "$out/$w-old.$ext" "$out/$w-new.$ext" || same=no
    done
    [ "$same" = yes ] && [ "$n" -gt 0 ] || status=1
    echo "| $w | $n | $bytes | $same |"
}
if [ -d "$fashion" ]; then
    compare fashion configs/fashion-mnist.yaml
    compare fashion-cosine configs/fashion-mnist.yaml --set knn.metric=cosine
else
    echo "| fashion | $fashion missing (apt-get install dataset-fashion-mnist) | | - |"
fi
compare blobs64 "$out/blobs64/job.yaml" --set knn.engine=brute --set knn.k=16
compare tree "$d/job.yaml" --set knn.engine=kdtree --set knn.k=16
LAUNCH="mpirun -n 2" compare spatial "$d/job.yaml" --set knn.engine=kdtree --set knn.k=16 \
    --set mpi.partition=spatial
compare default
exit "$status"
