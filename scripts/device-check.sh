#!/usr/bin/env bash
# The GPU device check, prepared for a session that is lent a GPU machine:
# build, prove exactness on the GPU (engine tests against the host oracle,
# ranks, end to end), then time the engines against the same workloads as
# bench/RESULTS.md. One command; about 5-8 minutes on a GPU node.
#   bash scripts/device-check.sh [--quick]     (--quick: smaller workloads, for a dry run on CPU)
# Results: stdout and bench/out/device-check.txt. Needs the GPU vendor's OpenCL ICD.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
quick=0
[ "${1:-}" = --quick ] && quick=1
lbk_install $LBK_BUILD_PACKAGES
lbk_build >/dev/null
lbk_mpi_env
B=$LBK_BUILD
mkdir -p "$LBK_ROOT/bench/out"
{
echo "# device check $(date -u '+%Y-%m-%d %H:%M UTC')"
"$B/lbknn" devices
# Exactness on whatever device the run picks (GPUs first): every engine test
# compares against the host oracle byte for byte.
(cd "$B" && ctest -LE 'slow|slurm' -R 'brute|kdtree|e2e|mpi' -j1 2>&1 | tail -n 5)
if [ "$quick" = 1 ]; then n3=200000 q3=20000 n7=1000000; else n3=1000000 q3=100000 n7=10000000; fi
echo "## tree build and query, 3-D (cudaKDTree reference, RTX 4090: ~200 ms build at 1e7)"
"$B/tests/kdtree/kdtree_bench" build "$n7" uniform radix rr 3 | tail -n 1
"$B/tests/kdtree/kdtree_bench" build "$n7" uniform bitonic rr 1 | tail -n 1
"$B/tests/kdtree/kdtree_bench" query "$n3" "$q3" 16 3 | tail -n 2
echo "## brute force: PBKNN setting and Fashion-MNIST"
"$B/bench/pbknn_select" --m 1,8,64 --reps 5 --groups-sweep 1,8,32
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] && \
    "$B/bench/fashion_bench" --dir /usr/share/datasets/fashion-mnist
echo "## selection against K: bubble vs sort-merge (bench/results/embeddings.md)"
"$B/bench/select_k" --k 16,64,256,1024,4096 --reps 3 --bubble-max-k 1024
echo "## default job"
"$B/lbknn" run --quiet --set output.report="$LBK_ROOT/bench/out/device-default.yaml" && \
    grep -E 'queries_per_second|accuracy:|device:' "$LBK_ROOT/bench/out/device-default.yaml"
} 2>&1 | tee "$LBK_ROOT/bench/out/device-check.txt"
