#!/bin/bash
# Two builds of lbknn side by side (an earlier commit's and this one's) on the
# workloads a change must not slow down, with each workload's peer in the
# same round: rounds interleaved, the order of the two builds alternating
# from round to round, so that both see the same machine. Medians over the
# rounds, NEW / OLD and each build against the peer.
#
#   bash bench/ab.sh OLD_BUILD NEW_BUILD [--rounds N] [--only LIST]
#
#   fashion  Fashion-MNIST, K = 5, L2 (configs/fashion-mnist.yaml): the
#            report's query phase and total | FAISS IndexFlatL2 search
#   tree     1e6 uniform 3-D points, 1e5 queries, K = 16: the report's build
#            and query phases | cKDTree build, query (2 workers)
#   pbknn    the PBKNN setting, m = 64 (bench/pbknn_select, each build's
#            own): the engine's end to end | FAISS (bench/pbknn_peers.py)
#   default  the built-in 16-d default job's search phase | FAISS on the
#            same data (lbknn generate, seed 42)
#   graph    task graph of the tree job's 1e6 points, K = 16, neighbours,
#            distances and the .npz written: the process's wall time, end
#            to end as a user runs it (start-up included) | cKDTree build +
#            query(k = 17, workers = 2)
#   spatial  the tree job above at P = 1 and P = 2 ranks under mpirun, each
#            rank bound to one core: the query phase and its 1 -> 2 speed-up
#            (P = 1 takes the shard path, the default), the report's search
#            (routing, both phases, the merges, the vote), and the search of
#            P = 1 under mpi.partition=spatial (wall_scaling.sh's P = 1)
#
# A build is a build directory (its lbknn and bench/ programs). Tables on
# stdout; data and reports in bench/out/ab/.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=5 only=all builds=()
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    -*) echo "usage: $0 OLD_BUILD NEW_BUILD [--rounds N] [--only LIST]" >&2; exit 2 ;;
    *) builds+=("$(cd "$1" && pwd)") ;;
    esac
    shift
done
[ ${#builds[@]} -eq 2 ] || { echo "usage: $0 OLD_BUILD NEW_BUILD [--rounds N] [--only LIST]" >&2; exit 2; }
cd "$root" || exit 1
. "$root/bench/peers.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$root/bench/out/ab
mkdir -p "$out"
# Both builds start from the same empty program caches, derived parameters.
export XDG_CACHE_HOME=$out/cache
py=/usr/bin/python3
fashion=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
samples=$out/samples.tsv
: > "$samples"

wanted() { [ "$only" = all ] || [[ ",$only," == *",$1,"* ]]; }
# record WORKLOAD METRIC WHO SECONDS
record() { printf '%s\t%s\t%s\t%s\n' "$@" >> "$samples"; }
# phase REPORT KEY: a timing from an lbknn report (phases: their max over ranks).
phase() {
    $py - "$1" "$2" <<'PY'
import sys, yaml
t = yaml.safe_load(open(sys.argv[1]))["timings_s"]
v = t[sys.argv[2]]
print(f'{(v["max"] if isinstance(v, dict) else v):.4f}')
PY
}
run_lbknn() { # LBKNN REPORT ARGS...: one quiet run, no outputs but its report
    local l=$1 report=$2; shift 2
    "$l" run "$@" --quiet --set output.predictions= --set output.neighbors= \
        --set output.distances= --set output.probabilities= --set output.report="$report"
}
# seconds_since NS: the seconds since date +%s%N said NS.
seconds_since() {
    local ns=$(($(date +%s%N) - $1))
    printf '%d.%09d' $((ns / 1000000000)) $((ns % 1000000000))
}
# The two builds in this round's order: OLD NEW, then NEW OLD.
order() { if [ $(($1 % 2)) -eq 1 ]; then echo "0 1"; else echo "1 0"; fi; }
name() { [ "$1" = 0 ] && echo old || echo new; }

echo "# bench/ab.sh $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' '); ISA: $(grep -o -w -E 'avx2|avx512f|avx512bw|avx512vl|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for i in 0 1; do
    echo "# $(name $i): ${builds[$i]} ($(git -C "${builds[$i]}" rev-parse --short HEAD 2>/dev/null || echo '?'); $("${builds[$i]}/lbknn" --version | head -1))"
done
lbk_peers_describe
# Every program either build will run, compiled before the timed rounds.
for i in 0 1; do
    "${builds[$i]}/lbknn" run --quiet --set synthetic.points=20000 --set synthetic.queries=100 \
        --set synthetic.dim=3 --set knn.engine=kdtree --set knn.k=16 --set output.predictions= \
        --set output.report= >/dev/null
done
d=$out/uniform-1e6
if wanted tree || wanted spatial || wanted graph; then
    [ -s "$d/reference.fvecs" ] ||
        "${builds[1]}/bench/bench_points" "$d" uniform 1000000 100000 3 >/dev/null
    for i in 0 1; do run_lbknn "${builds[$i]}/lbknn" "$out/warm.yaml" "$d/job.yaml" \
        --set knn.engine=kdtree --set knn.k=16 >/dev/null; done
fi
if wanted default; then
    [ -s "$out/blobs16/reference.fvecs" ] || "${builds[1]}/lbknn" generate "$out/blobs16" \
        --points 100000 --queries 10000 --dim 16 --classes 10 --seed 42 >/dev/null
fi
mkdir -p "$out/pbknn"

for r in $(seq "$rounds"); do
    echo "# round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
    for i in $(order "$r"); do
        l=${builds[$i]}/lbknn who=$(name "$i")
        if wanted fashion; then
            f=$out/fashion-$who-$r.yaml
            run_lbknn "$l" "$f" configs/fashion-mnist.yaml &&
                record fashion query "$who" "$(phase "$f" query)" &&
                record fashion total "$who" "$(phase "$f" total)"
        fi
        if wanted tree; then
            f=$out/tree-$who-$r.yaml
            run_lbknn "$l" "$f" "$d/job.yaml" --set knn.engine=kdtree --set knn.k=16 &&
                record tree build "$who" "$(phase "$f" build)" &&
                record tree query "$who" "$(phase "$f" query)"
        fi
        if wanted pbknn; then
            ms=$("${builds[$i]}/bench/pbknn_select" --m 64 --reps 7 --write "$out/pbknn" |
                awk '$1 == 64 {print $NF}')
            [ -n "$ms" ] && record pbknn end_to_end "$who" "$($py -c "print($ms / 1e3)")"
        fi
        if wanted graph; then
            t0=$(date +%s%N)
            "$l" run --quiet --set task=graph --set reference.path="$d/reference.fvecs" \
                --set knn.k=16 --set knn.engine=kdtree --set output.neighbors="$out/g-nb.npy" \
                --set output.distances="$out/g-d.npy" --set output.graph="$out/g.npz" &&
                record graph end_to_end "$who" "$(seconds_since "$t0")"
        fi
        if wanted default; then
            f=$out/default-$who-$r.yaml
            run_lbknn "$l" "$f" && record default search "$who" "$(phase "$f" search)"
        fi
        if wanted spatial; then
            for np in 1 2; do
                f=$out/spatial-$who-p$np-$r.yaml
                mpirun -n "$np" --bind-to core "$l" run "$d/job.yaml" --quiet \
                    --set knn.engine=kdtree --set knn.k=16 --set output.predictions= \
                    --set output.report="$f" &&
                    record spatial "query_p$np" "$who" "$(phase "$f" query)" &&
                    record spatial "search_p$np" "$who" "$(phase "$f" search)"
            done
            f=$out/spatial-$who-p1s-$r.yaml
            mpirun -n 1 --bind-to core "$l" run "$d/job.yaml" --quiet --set mpi.partition=spatial \
                --set knn.engine=kdtree --set knn.k=16 --set output.predictions= \
                --set output.report="$f" &&
                record spatial search_p1_spatial "$who" "$(phase "$f" search)"
        fi
    done
    if wanted fashion; then
        record fashion query peer "$($py bench/cpu_peers.py fashion "$fashion" l2 uniform |
            awk '/^faiss/ {print $2}')"
    fi
    if wanted tree; then
        record tree build peer "$($py bench/cpu_peers.py tree-build "$d/reference.fvecs" |
            awk '{print $2}')"
        record tree query peer "$($py bench/cpu_peers.py tree-query "$d/reference.fvecs" \
            "$d/query.fvecs" 16 | awk '{print $2}')"
    fi
    if wanted graph; then
        record graph end_to_end peer "$($py bench/cpu_peers.py graph "$d/reference.fvecs" 16 |
            awk '{print $2}')"
    fi
    if wanted pbknn; then
        ms=$(OMP_WAIT_POLICY=PASSIVE $py bench/pbknn_peers.py "$out/pbknn" --m 64 --reps 7 |
            awk '$1 == 64 {print $4}')
        [ -n "$ms" ] && record pbknn end_to_end peer "$($py -c "print($ms / 1e3)")"
    fi
    if wanted default; then
        record default search peer "$($py bench/cpu_peers.py blobs "$out/blobs16" 5 |
            awk '/^faiss/ {print $2}')"
    fi
done

echo
$py - "$samples" "$rounds" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, m, who, v = line.rstrip("\n").split("\t")
    if v:
        rows[(w, m, who)].append(float(v))
print(f"Medians of {sys.argv[2]} interleaved rounds (seconds; range in brackets):")
print()
print("| workload | measure | old | new | new / old | peer | old / peer | new / peer |")
print("|---|---|---|---|---|---|---|---|")
seen = []
for (w, m, _) in rows:
    if (w, m) not in seen:
        seen.append((w, m))
def cell(v):
    return f"{statistics.median(v):.4g} [{min(v):.4g}-{max(v):.4g}]" if v else "-"
for w, m in seen:
    o, n, p = rows.get((w, m, "old"), []), rows.get((w, m, "new"), []), rows.get((w, m, "peer"), [])
    mo = statistics.median(o) if o else None
    mn = statistics.median(n) if n else None
    mp = statistics.median(p) if p else None
    ratio = lambda a, b: f"{a / b:.3f}" if a and b else "-"
    print(f"| {w} | {m} | {cell(o)} | {cell(n)} | **{ratio(mn, mo)}** | {cell(p)} | "
          f"{ratio(mo, mp)} | {ratio(mn, mp)} |")
for who in ("old", "new"):
    p1, p2 = rows.get(("spatial", "query_p1", who)), rows.get(("spatial", "query_p2", who))
    if p1 and p2:
        print(f"\nspatial query phase 1 -> 2 ranks, {who}: "
              f"{statistics.median(p1) / statistics.median(p2):.2f}x")
PY
echo
echo "# done $(date -u '+%H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
