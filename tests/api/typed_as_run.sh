#!/usr/bin/env bash
# The typed build gives what `lbknn run` gives on the same compact file,
# byte for byte: test_api_typed writes big-ann files (.u8bin, .i8bin), the
# CLI searches them with reference.type named (brute force, exact integer
# keys: uint8 l2, int8 ip), and test_api_typed compares the library's ids and distances (bits)
# with the CLI's nn.ivecs and dist.fvecs.
# Usage: typed_as_run.sh LBKNN TEST_API_TYPED
set -euo pipefail
lbknn=$1 typed=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for spec in "uint8 u8bin l2" "int8 i8bin ip"; do
    read -r type ext metric <<<"$spec"
    "$typed" --cli-write "$dir" "$type"
    cat >"$dir/job.yaml" <<YAML
task: search
reference: {path: reference.$ext, type: $type}
query: {path: query.$ext}
knn: {k: 6, metric: $metric, engine: brute}
output: {neighbors: $dir/nn.ivecs, distances: $dir/dist.fvecs}
YAML
    "$lbknn" run "$dir/job.yaml" -q
    "$typed" --cli-compare "$dir" "$type" "$metric"
done
