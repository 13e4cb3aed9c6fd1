#!/usr/bin/env bash
# The library's self search gives what `lbknn run` with task: graph gives,
# byte for byte, for P = 1..4 ranks and the partitions of the engine (the
# k-d tree: shard and spatial; brute force: shard and replicate), with the
# index's knn.k K + 1 and larger (every rank count one of them). Points with exact duplicates (rows
# copied over others) put some points beyond their own K + 1.
# Usage: self_as_graph.sh LBKNN TEST_API_SELF MPIEXEC ENGINE
set -euo pipefail
lbknn=$1 compare=$2 mpiexec=$3 engine=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$lbknn" generate "$dir" --points 2500 --queries 10 --dim 3 --classes 4 --seed 17 >/dev/null
# Rows 100..109 become copies of row 7: eleven equal points.
record=16
for r in $(seq 100 109); do
    dd if="$dir/reference.fvecs" of="$dir/reference.fvecs" bs=$record skip=7 seek=$r count=1 \
        conv=notrunc status=none
done
k=6
cat >"$dir/graph.yaml" <<YAML
task: graph
reference: {path: reference.fvecs}
knn: {k: $k, engine: $engine}
output: {neighbors: graph-nn.ivecs, distances: graph-dist.fvecs}
YAML
(cd "$dir" && "$lbknn" run graph.yaml -q)
partitions="shard spatial"
[ "$engine" = brute ] && partitions="shard replicate"
# The index's knn.k: K + 1 on odd rank counts, K + 4 on even ones.
for p in 1 2 3 4; do
    kk=$((k + 1 + 3 * (1 - p % 2)))
    for partition in $partitions; do
        "$mpiexec" -n $p "$compare" "$dir" $k $kk $engine $partition
    done
done
