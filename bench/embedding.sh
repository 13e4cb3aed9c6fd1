#!/usr/bin/env bash
# The embedding workload: N x D synthetic float32 references (Gaussian blobs,
# 1000 classes), Q queries, K = 20, cosine, softmax votes (T = 0.07): lbknn
# (the whole CLI run from .npy files, and the brute engine alone) against
# FAISS IndexFlatIP on L2-normalised vectors and scikit-learn (brute, cosine,
# on a subset of the queries, scaled). Rounds are interleaved so that the
# ratios come from side-by-side runs. Run from the repository root after
# building:
#   bash bench/embedding.sh [BUILD_DIR] [--points N] [--queries Q] [--dim D]
#                           [--rounds R] [--data DIR]
# Defaults: 1000000 x 768, 10000 queries, 2 rounds, data under /tmp (3 GB,
# kept for the next run: delete it when done). Prints one table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$(cd "$1" && pwd); shift; fi
points=1000000 queries=10000 dim=768 rounds=2 data=""
while [ $# -gt 0 ]; do
    case $1 in
    --points) points=$2 ;;
    --queries) queries=$2 ;;
    --dim) dim=$2 ;;
    --rounds) rounds=$2 ;;
    --data) data=$2 ;;
    *) echo "embedding.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
data=${data:-/tmp/lbknn-embedding-${points}x${dim}-q${queries}}
py=/usr/bin/python3
peers=$root/bench/embedding_peers.py
# OpenBLAS's SkylakeX kernel where the CPU has AVX-512 (it crashes AVX2-only
# machines); otherwise OpenBLAS's own choice. Benchmarks only, never tests.
if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi

echo "## embedding workload, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -E 'Model name' | sed 's/^/# /'
if [ ! -s "$data/query-labels.npy" ]; then
    $py "$peers" generate "$data" --points "$points" --queries "$queries" --dim "$dim"
fi
work=$(mktemp -d /tmp/lbknn-embedding-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/job.yaml" <<EOF
reference: {path: $data/reference.npy, labels: $data/reference-labels.npy}
query: {path: $data/query.npy, labels: $data/query-labels.npy}
knn: {k: 20, metric: cosine, weights: softmax, temperature: 0.07, engine: auto}
output: {report: $work/report.yaml, neighbors: $work/nn.npy}
EOF

declare -a cli_s engine_s faiss_s
for r in $(seq 1 "$rounds"); do
    "$build/lbknn" run "$work/job.yaml" --quiet
    cli_s+=("$(awk '/^  search:/ {print $2}' "$work/report.yaml")")
    acc=$(awk '/^accuracy:/ {a=$2} /^top5_accuracy:/ {b=$2} END {printf "top-1 %.4f, top-5 %.4f", a, b}' "$work/report.yaml")
    echo "# round $r: lbknn run: search ${cli_s[-1]} s, $acc"
    out=$("$build/bench/embedding_bench" --dir "$data")
    echo "$out" | sed "s/^/# round $r: embedding_bench: /"
    engine_s+=("$(echo "$out" | awk '/^query time:/ {print $3}')")
    out=$($py "$peers" faiss "$data")
    echo "$out" | sed "s/^/# round $r: /"
    faiss_s+=("$(echo "$out" | awk '/^faiss/ {print $4}')")
done
out=$($py "$peers" sklearn "$data")
echo "$out" | sed 's/^/# /'
sk_s=$(echo "$out" | awk '/^sklearn/ {print $5}')

echo
echo "| round | lbknn run: search (s) | lbknn engine: query (s) | FAISS IndexFlatIP search (s) | run / FAISS | engine / FAISS |"
echo "|---|---:|---:|---:|---:|---:|"
for i in "${!faiss_s[@]}"; do
    awk -v r=$((i + 1)) -v c="${cli_s[$i]}" -v e="${engine_s[$i]}" -v f="${faiss_s[$i]}" \
        'BEGIN {printf "| %d | %.2f | %.2f | %.2f | %.2fx | %.2fx |\n", r, c, e, f, c / f, e / f}'
done
echo "| sklearn brute cosine (scaled from a subset) | | | $sk_s | | |"
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
