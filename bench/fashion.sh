#!/bin/bash
# Fashion-MNIST (60000 x 784 references, 10000 queries, K = 5, L2): the lbknn
# brute engine (prefilter on and off) against FAISS IndexFlatL2 and
# scikit-learn brute force. Run from the repository root after building:
#   cmake -S . -B build && cmake --build build -j && bash bench/fashion.sh [build]
# The machine should be otherwise idle; results go to stdout (copy them into
# bench/results/brute.md with the date and load).
set -e
. "$(dirname "$0")/peers.sh"
build=${1:-build}
dir=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## lbknn brute, prefilter auto (on)"
"$build/bench/fashion_bench" --dir "$dir"
echo "## lbknn brute, prefilter off (direct exact keys)"
"$build/bench/fashion_bench" --dir "$dir" --prefilter off
echo "## peers"
lbk_peers_describe
/usr/bin/python3 "$(dirname "$0")/fashion_peers.py" --dir "$dir"
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
