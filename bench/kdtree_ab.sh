#!/bin/bash
# Interleaved comparison for bench/results/kdtree.md: our build and query, then
# cKDTree/scikit-learn, three rounds back to back, so that both sides see the
# same machine load. Usage: bench/kdtree_ab.sh [BUILD_DIR]  (default build)
set -e
cd "$(dirname "$0")/.."
. bench/peers.sh
B=${1:-build}/tests/kdtree/kdtree_bench
lbk_peers_describe
for r in 1 2 3; do
  echo "## round $r: $(uptime)"
  $B build 1e6 uniform radix rr 3 | tail -1
  $B build 1e6 clustered radix rr 3 | tail -1
  /usr/bin/python3 bench/kdtree_peers.py build 1e6 | tail -2
  $B query 1e6 1e5 16 3 | tail -2
  /usr/bin/python3 bench/kdtree_peers.py query | tail -2
done
