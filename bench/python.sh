#!/bin/bash
# lbknn's Python estimator on Fashion-MNIST (K = 5) against `lbknn run`, FAISS
# IndexFlatL2 + vote, and scikit-learn, side by side in one run
# (bench/python_peers.py). Run from the repository root after building:
#   cmake -S . -B build && cmake --build build -j && bash bench/python.sh [build] [ROUNDS (7)]
# The machine should be otherwise idle; copy the output into bench/RESULTS.md
# with the date and CPU.
set -e
. "$(dirname "$0")/peers.sh"
lbk_install dataset-fashion-mnist python3-yaml
build=${1:-build}
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
lbk_peers_describe
/usr/bin/python3 "$(dirname "$0")/python_peers.py" --build "$build" --rounds "${2:-7}"
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
