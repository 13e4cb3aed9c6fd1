#!/bin/bash
# Issue 11's targets on this CPU, each against its peer on the same data in
# the same run, rounds interleaved (ours, then the peer's):
#
#   bash bench/cpu.sh [BUILD_DIR] [--rounds N] [--no-1e7] [--avx2] [--only LIST]
#
# --only runs the named tables only (comma-separated, from the names below).
#
#   fashion-l2   Fashion-MNIST, K = 5, L2: `lbknn run configs/fashion-mnist.yaml`
#                end to end (its total: reading the gzipped IDX files included)
#                against FAISS IndexFlatL2's search; scikit-learn brute too
#   fashion-l1   the same with L1 and distance weights against scikit-learn
#                brute (KNeighborsClassifier, manhattan), which takes minutes:
#                its time on the first 500 queries, scaled x20 (said in the table)
#   tree         1e6 uniform and clustered 3-D points (bench_points), 1e5
#                queries, K = 16: the report's build and query phases against
#                cKDTree(balanced_tree=True, leafsize=16) and its query (workers=2)
#   tree-1e7     the build phase at 1e7 uniform points against cKDTree's build
#   pbknn        the PBKNN setting at m = 64 (bench/pbknn_select, end to end)
#                against scikit-learn and FAISS (bench/pbknn_peers.py)
#   default-job  the built-in 16-d default job's search phase against FAISS and
#                scikit-learn on the same data (`lbknn generate`, seed 42)
#
# --avx2 runs lbknn on PoCL's AVX2 ("haswell") kernel variant and the peers on
# OpenBLAS's Haswell kernels, on any AVX-512 CPU: a stand-in for an AVX2-only
# machine's code generation and register pressure (16 vector registers), not
# for its absolute speed. lbknn runs with the parameters derived from the
# device (no `lbknn tune` cache: XDG_CACHE_HOME points into bench/out/cpu).
# Tables on stdout; reports and data in bench/out/cpu/.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build rounds=3 big=1 avx2=0 only=all
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    --no-1e7) big=0 ;;
    --avx2) avx2=1 ;;
    --only) only=$2; shift ;;
    -*) echo "usage: $0 [BUILD_DIR] [--rounds N] [--no-1e7] [--avx2] [--only LIST]" >&2; exit 2 ;;
    *) B=$(cd "$1" && pwd) ;;
    esac
    shift
done
cd "$root" || exit 1
if [ "$avx2" = 1 ]; then
    export POCL_KERNELLIB_NAME=avx2 OPENBLAS_CORETYPE=Haswell
fi
. "$root/bench/peers.sh"
out=$root/bench/out/cpu
mkdir -p "$out"
export XDG_CACHE_HOME=$out/cache
py=/usr/bin/python3
L=$B/lbknn
fashion=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}

# phases REPORT: build query total search accuracy, from an lbknn report.
phases() {
    $py - "$1" <<'PY'
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
t = r["timings_s"]
print(f'{t["build"]["max"]:.3f} {t["query"]["max"]:.3f} {t["total"]:.3f} {t["search"]:.3f} {r.get("accuracy") or 0:.4f}')
PY
}
wanted() { [ "$only" = all ] || [[ ",$only," == *",$1,"* ]]; }
ratio() { $py -c "print(f'{$1 / $2:.2f}x')"; }
run_lbknn() { # REPORT ARGS...: one run, quiet, its report
    local report=$1; shift
    "$L" run "$@" --quiet --set output.predictions= --set output.neighbors= \
        --set output.distances= --set output.probabilities= --set output.report="$report"
}

echo "# bench/cpu.sh $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); ISA: $(grep -o -w -E 'avx2|avx512f|avx512bw|avx512vl|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "# lbknn device: $("$L" devices | sed -n 's/^  \* index [0-9]* *[A-Z]* *//p' | head -1)"
lbk_peers_describe
"$L" run --set synthetic.points=2000 --set synthetic.queries=10 | grep -m1 'kernels' | sed 's/^ */# lbknn kernel parameters: /'
# Programs are compiled once per device and kept (PoCL's cache, lbknn's
# program cache under XDG_CACHE_HOME): a first run pays seconds of
# compilation that no later run does. One small tree run compiles the
# tree's programs for 3-D, K = 16 before the timed rounds.
"$L" run --quiet --set synthetic.points=20000 --set synthetic.queries=100 --set synthetic.dim=3 \
    --set knn.engine=kdtree --set knn.k=16 --set output.predictions= --set output.report= >/dev/null

if wanted fashion-l2; then
echo
echo "## Fashion-MNIST, K = 5, L2: lbknn end to end vs FAISS IndexFlatL2 search"
echo "| round | lbknn total s | (read / build / query) | FAISS s | ratio | sklearn s | accuracy |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq "$rounds"); do
    run_lbknn "$out/fashion-l2-$r.yaml" configs/fashion-mnist.yaml || continue
    read -r build query total search acc < <(phases "$out/fashion-l2-$r.yaml")
    read_s=$($py -c "import yaml; print(f'{yaml.safe_load(open(\"$out/fashion-l2-$r.yaml\"))[\"timings_s\"][\"read\"][\"max\"]:.2f}')")
    peers=$($py bench/cpu_peers.py fashion "$fashion" l2 uniform)
    faiss=$(echo "$peers" | awk '/^faiss/ {print $2}')
    skl=$(echo "$peers" | awk '/^sklearn/ {print $2}')
    echo "| $r | $total | $read_s / $build / $query | $faiss | **$(ratio "$total" "$faiss")** | $skl | $acc |"
done
fi

if wanted fashion-l1; then
echo
echo "## Fashion-MNIST, K = 5, L1, distance weights: lbknn end to end vs scikit-learn brute"
echo "| round | lbknn total s | query s | sklearn s (500 queries x 20) | ratio | accuracy |"
echo "|---|---|---|---|---|---|"
for r in $(seq "$(( rounds < 2 ? rounds : 2 ))"); do
    run_lbknn "$out/fashion-l1-$r.yaml" configs/fashion-mnist.yaml --set knn.metric=l1 \
        --set knn.weights=distance || continue
    read -r build query total search acc < <(phases "$out/fashion-l1-$r.yaml")
    skl=$($py bench/cpu_peers.py fashion "$fashion" l1 distance 500 | awk '{print $2 * 20}')
    echo "| $r | $total | $query | $skl | **$(ratio "$total" "$skl")** | $acc |"
done
fi

if wanted tree; then
echo
echo "## k-d tree, 1e6 3-D points, 1e5 queries, K = 16: the report's phases vs cKDTree"
echo "| round | data | lbknn build s | cKDTree build s | ratio | lbknn query s | cKDTree query s (2 workers) | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for kind in uniform clustered; do
    [ -s "$out/$kind-1e6/reference.fvecs" ] || "$B/bench/bench_points" "$out/$kind-1e6" $kind 1000000 100000 3 >/dev/null
done
# PoCL compiles a kernel again for a new launch size: one untimed run at
# the tables' size, so that round 1 does not carry it.
run_lbknn "$out/tree-warmup.yaml" "$out/uniform-1e6/job.yaml" --set knn.engine=kdtree \
    --set knn.k=16 >/dev/null
for r in $(seq "$rounds"); do
    for kind in uniform clustered; do
        d=$out/$kind-1e6
        run_lbknn "$out/tree-$kind-$r.yaml" "$d/job.yaml" --set knn.engine=kdtree --set knn.k=16 || continue
        read -r build query total search acc < <(phases "$out/tree-$kind-$r.yaml")
        cb=$($py bench/cpu_peers.py tree-build "$d/reference.fvecs" | awk '{print $2}')
        cq=$($py bench/cpu_peers.py tree-query "$d/reference.fvecs" "$d/query.fvecs" 16 | awk '{print $2}')
        echo "| $r | $kind | $build | $cb | **$(ratio "$build" "$cb")** | $query | $cq | **$(ratio "$query" "$cq")** |"
    done
done
fi

if [ "$big" = 1 ] && wanted tree-1e7; then
    echo
    echo "## k-d tree build, 1e7 uniform 3-D points: the report's build phase vs cKDTree"
    echo "| round | lbknn build s | cKDTree build s | ratio |"
    echo "|---|---|---|---|"
    [ -s "$out/uniform-1e7/reference.fvecs" ] || "$B/bench/bench_points" "$out/uniform-1e7" uniform 10000000 1000 3 >/dev/null
    for r in $(seq "$(( rounds < 2 ? rounds : 2 ))"); do
        run_lbknn "$out/tree-1e7-$r.yaml" "$out/uniform-1e7/job.yaml" --set knn.engine=kdtree \
            --set knn.k=16 || continue
        read -r build query total search acc < <(phases "$out/tree-1e7-$r.yaml")
        cb=$($py bench/cpu_peers.py tree-build "$out/uniform-1e7/reference.fvecs" 1 | awk '{print $2}')
        echo "| $r | $build | $cb | **$(ratio "$build" "$cb")** |"
    done
fi

if wanted pbknn; then
echo
echo "## PBKNN setting, m = 64 (655 360 x 64-d references, 32 queries, K = 16)"
mkdir -p "$out/pbknn"
"$B/bench/pbknn_select" --m 64 --reps 7 --write "$out/pbknn" | tail -3
OMP_WAIT_POLICY=PASSIVE $py bench/pbknn_peers.py "$out/pbknn" --m 64 --reps 7 | tail -3
fi

if wanted default-job; then
echo
echo "## 16-d default job (100 000 x 16 blobs, 10 000 queries, K = 5): search phase vs peers"
[ -s "$out/blobs16/reference.fvecs" ] || "$L" generate "$out/blobs16" --points 100000 --queries 10000 \
    --dim 16 --classes 10 --seed 42 >/dev/null
echo "| round | lbknn search s (built-in default job) | FAISS s | scikit-learn s |"
echo "|---|---|---|---|"
for r in $(seq "$rounds"); do
    run_lbknn "$out/default-$r.yaml" || continue
    read -r build query total search acc < <(phases "$out/default-$r.yaml")
    peers=$($py bench/cpu_peers.py blobs "$out/blobs16" 5)
    echo "| $r | $search | $(echo "$peers" | awk '/^faiss/ {print $2}') | $(echo "$peers" | awk '/^sklearn/ {print $2}') |"
done
fi

echo
echo "# done $(date -u '+%H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
