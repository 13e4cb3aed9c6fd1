#!/usr/bin/env bash
# The library gives what `lbknn run` gives, byte for byte: one generated
# data set, run by the CLI with every output written and searched through
# lbknn.h by test_api_run_compare, which compares ids, distances (bits),
# predictions and the probabilities as the CLI prints them (%.9g).
# Usage: same_as_run.sh LBKNN COMPARE ENGINE
set -euo pipefail
lbknn=$1 compare=$2 engine=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$lbknn" generate "$dir" --points 3000 --queries 400 --dim 6 --classes 5 --seed 7 --spread 1.5 \
    >/dev/null
for weights in uniform distance softmax; do
    "$lbknn" run "$dir/job.yaml" -q --set knn.k=7 --set knn.engine="$engine" \
        --set knn.weights="$weights" --set knn.temperature=0.5 --set device.batch=64 \
        --set output.neighbors="$dir/nn.ivecs" --set output.distances="$dir/dist.fvecs" \
        --set output.predictions="$dir/pred.csv" --set output.probabilities="$dir/proba.csv"
    "$compare" "$dir" 7 "$engine" "$weights"
done
