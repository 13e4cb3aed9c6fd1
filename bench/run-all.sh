#!/usr/bin/env bash
# Every benchmark of bench/RESULTS.md, one after the other, on an otherwise
# idle machine: bash bench/run-all.sh [BUILD_DIR]  (default build).
# Output: bench/out/all.txt (and each script's own files under bench/out/).
# The peers are installed, and given OpenBLAS with the right kernel for this
# CPU, by bench/peers.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$root/build}" && pwd)
mkdir -p "$root/bench/out"
cd "$root"
. "$root/bench/peers.sh"
py=/usr/bin/python3
{
echo "# lbknn benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uptime)"
lscpu | grep -E 'Model name|^CPU\(s\)|L2 cache|^Flags' | sed -E 's/^(Flags:).*/\1 '"$(grep -o -w -E 'avx2|avx512f|avx512bw|avx512vl|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')"'/'
lbk_peers_describe
echo; echo "## PBKNN paper setting (bench/pbknn_select + bench/pbknn_peers.py)"
mkdir -p /tmp/lbk_pbknn_data
"$B/bench/pbknn_select" --m 1,8,64 --reps 7 --groups-sweep 1,2,4,8,32 --write /tmp/lbk_pbknn_data
$py bench/pbknn_peers.py /tmp/lbk_pbknn_data --reps 7
OMP_WAIT_POLICY=PASSIVE $py bench/pbknn_peers.py /tmp/lbk_pbknn_data --reps 7
rm -rf /tmp/lbk_pbknn_data
echo; echo "## Fashion-MNIST (bench/fashion.sh)"
bash bench/fashion.sh "$B"
echo; echo "## Selection against K: bubble vs sort-merge (bench/select_k)"
"$B/bench/select_k" --k 16,32,64,128,256,1024,4096 --reps 3 --bubble-max-k 1024
echo; echo "## Embedding workload: 1M x 768, K = 20, cosine, softmax (bench/embedding.sh)"
bash bench/embedding.sh "$B"
echo; echo "## k-d tree, interleaved with cKDTree and scikit-learn (bench/kdtree_ab.sh)"
bash bench/kdtree_ab.sh "$B"
echo; echo "## k-d tree builds at 1e7 (radix) and peers"
"$B/tests/kdtree/kdtree_bench" build 1e7 uniform radix rr 3 | tail -1
"$B/tests/kdtree/kdtree_bench" build 1e7 clustered radix rr 3 | tail -1
"$B/tests/kdtree/kdtree_bench" build 1e6 uniform radix widest 3 | tail -1
$py bench/kdtree_peers.py build 1e5 1e6 1e7
echo; echo "## k-d tree build scaling"
"$B/tests/kdtree/kdtree_bench" scaling radix 2e7
echo; echo "## tree vs brute force crossover"
"$B/tests/kdtree/kdtree_bench" crossover 100000 10000 16 2 4 6 8 10 12 16
echo; echo "## CPU targets (issue 11): every target against its peer, this CPU (bench/cpu.sh)"
bash bench/cpu.sh "$B"
echo; echo "## ... and on PoCL's AVX2 variant with OpenBLAS Haswell (bench/cpu.sh --avx2), where the CPU has AVX-512"
grep -qw avx512f /proc/cpuinfo && bash bench/cpu.sh "$B" --avx2 --no-1e7
echo; echo "## scikit-learn drop-ins: the transformer's graph, p = 1, callable weights, n_jobs (bench/transformer.sh)"
bash bench/transformer.sh "$B"
echo; echo "## MPI scaling (bench/scaling.sh)"
LBKNN="$B/lbknn" bash bench/scaling.sh --fashion-repeat 2
echo; echo "## Query phase 1 -> 2 ranks, bound to cores (bench/wall_scaling.sh; --cluster needs root)"
LBKNN="$B/lbknn" bash bench/wall_scaling.sh
[ "$(id -u)" = 0 ] && LBKNN="$B/lbknn" bash bench/wall_scaling.sh --cluster --out "$root/bench/out/wall_scaling_tcp"
echo; echo "# done $(date -u '+%H:%M UTC'), $(uptime)"
} 2>&1 | tee "$root/bench/out/all.txt"
