#!/bin/bash
# lbknn's scikit-learn drop-ins (KNeighborsTransformer's graph, the
# classifier with p = 1 and with callable weights, n_jobs) against
# scikit-learn, side by side in one run (bench/transformer_peers.py). Run
# from the repository root after building:
#   cmake -S . -B build && cmake --build build -j && bash bench/transformer.sh [build] [ROUNDS (7)]
# The machine should be otherwise idle; copy the output into
# bench/RESULTS.md with the date and CPU.
set -e
. "$(dirname "$0")/peers.sh"
build=${1:-build}
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
lbk_peers_describe
PYTHONPATH=$build/python OMP_NUM_THREADS=$(nproc) \
    /usr/bin/python3 "$(dirname "$0")/transformer_peers.py" --rounds "${2:-7}"
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
