#!/bin/bash
# The spatial partition's query phase from one rank to two, in seconds:
# each rank bound to its own core and given one PoCL thread, P = 1 also
# under mpirun, P = 1 and P = 2 interleaved round by round (the order
# alternating), the medians over the rounds. The figure is the report's
# `search` (rank 0's batch loop: routing, both phases, the merges and the
# vote), nothing of the read, device or build phases.
#
#   bench/wall_scaling.sh [--rounds N (9)] [--data uniform|clustered|both]
#                         [--points N] [--queries N] [--cluster] [--pair]
#                         [--out DIR]
#
# --cluster: the same over the TCP-only test cluster of tests/multihost
# (two network namespaces, no shared-memory transport; needs root and
# iproute2): rank r on host r + 1, pinned to core r by taskset (one host's
# orted cannot see the other's binding). Without it: mpirun --bind-to core
# on this host, Open MPI's shared-memory transport.
#
# --pair: a third arm in every round, two independent P = 1 runs at once on
# this host, one pinned to each core: what two processes that never talk
# lose to sharing the machine (caches, memory, the hypervisor). Its slower
# run against the lone P = 1 of the same round gives the machine's ceiling
# for 1 -> 2 ranks, 2 x t(P = 1) / t(pair), and P = 2's speed-up as a
# fraction of that ceiling, t(pair) / (2 x t(P = 2)): 1.0 means the ranks
# lose nothing to each other beyond what the machine takes from any two
# processes.
#
# Data: bench_points (uniform, or 64 blobs of sigma 0.01 with the queries
# in the same blobs), 1e6 3-D references and 1e5 queries by default, K = 16,
# the k-d tree. Timing: run it on an otherwise idle machine; the per-round
# ratios and their range come out too, since a 2-vCPU VM moves a 0.25 s
# phase by +-20 % between runs. The table goes to stdout and DIR/table.md
# (default bench/out/wall_scaling/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=9 data=both pts=1000000 qs=100000 cluster=0 pair=0 out=$root/bench/out/wall_scaling
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    --data) data=$2; shift ;;
    --points) pts=$2; shift ;;
    --queries) qs=$2; shift ;;
    --cluster) cluster=1 ;;
    --pair) pair=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--rounds N] [--data uniform|clustered|both] [--points N] [--queries N] [--cluster] [--pair] [--out DIR]" >&2
       exit 2 ;;
    esac
    shift
done
# shellcheck source=counts_setup.sh
. "$root/bench/counts_setup.sh"
lbk_require_gen
lbk_pocl_cache_env
set +u
case $data in both) kinds="uniform clustered" ;; uniform | clustered) kinds=$data ;;
*) echo "unknown --data $data" >&2; exit 2 ;; esac
mkdir -p "$out"

if [ $cluster = 1 ]; then
    case $(realpath -m "$out")/ in
    /tmp/*) echo "--cluster: --out must be outside /tmp (each host has its own)" >&2; exit 2 ;;
    esac
    LBK_HOSTS=2
    # shellcheck source=../tests/multihost/cluster.sh
    . "$root/tests/multihost/cluster.sh"
    cluster_up || exit 1
    pin=$out/pin.sh
    printf '#!/bin/bash\nexec taskset -c "$OMPI_COMM_WORLD_RANK" "$@"\n' >"$pin"
    chmod +x "$pin"
    launch() { cluster_mpirun "$1" --bind-to none -x POCL_MAX_PTHREAD_COUNT "$pin" "$LBKNN" "${@:2}"; }
    where="TCP-only test cluster, 2 hosts (network namespaces), rank r on host r + 1 pinned to core r"
else
    launch() { mpirun -n "$1" --bind-to core -x POCL_MAX_PTHREAD_COUNT "$LBKNN" "${@:2}"; }
    where="one host, mpirun --bind-to core (shared-memory transport)"
fi
export POCL_MAX_PTHREAD_COUNT=1

{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
        "(family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model" \
        "$(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $where; $rounds interleaved rounds; $pts references x $qs queries, 3-D, K = 16"
    echo
    echo "| data | P = 1 search s (median) | P = 2 search s (median) | speed-up of the medians | per-round ratios: median (range) | P = 2 work-efficiency (evals) |"
    echo "|---|---|---|---|---|---|"
} | tee "$out/table.md"

arms=(1 2)
[ $pair = 1 ] && arms+=(pair) && : >"$out/pair.md"
pair_launch() { # the two runs at once, each alone on its core, under mpirun as P = 1 is
    local c
    for c in 0 1; do
        taskset -c "$c" mpirun -n 1 --bind-to none -x POCL_MAX_PTHREAD_COUNT "$LBKNN" "$@" \
            --set output.report="$rep.core$c" &
    done
    wait
}

for kind in $kinds; do
    d=$out/data/$kind-$pts-$qs
    [ -s "$d/reference.fvecs" ] || "$GEN" "$d" "$kind" "$pts" "$((qs > 0 ? qs : 1))" 3 >/dev/null
    : >"$out/$kind.times"
    for ((r = 1; r <= rounds; r++)); do
        # Every arm takes every place in the order, round by round.
        n=${#arms[@]} order=()
        for ((i = 0; i < n; i++)); do order+=("${arms[$(((i + r) % n))]}"); done
        [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${order[@]}" | tac))
        for np in "${order[@]}"; do
            rep=$out/$kind.p$np.r$r.yaml
            args=(run -q "$d/job.yaml" --set knn.k=16 --set knn.engine=kdtree
                --set mpi.partition=spatial --set output.predictions=)
            if [ "$np" = pair ]; then
                pair_launch "${args[@]}"
                s=$(cat "$rep.core0" "$rep.core1" | awk '$1 == "search:" && $2 > m {m = $2} END {print m}')
            else
                launch "$np" "${args[@]}" --set output.report="$rep"
                s=$(awk '$1 == "search:" {print $2}' "$rep")
            fi
            echo "$r $np $s $rep" >>"$out/$kind.times"
        done
    done
    /usr/bin/python3 - "$kind" "$out/$kind.times" "$out/pair.md" <<'PY' | tee -a "$out/table.md"
import re, statistics, sys
kind, path, pair_table = sys.argv[1:4]
t = {"1": {}, "2": {}, "pair": {}}
reports = {}
for line in open(path):
    r, p, s, rep = line.split()
    t[p][int(r)] = float(s)
    reports[(p, int(r))] = rep
def evals(rep):
    return [int(m) for m in re.findall(r"distance_evals: (\d+)", open(rep).read())]
one, two = evals(reports[("1", 1)]), evals(reports[("2", 1)])
m1, m2 = statistics.median(t["1"].values()), statistics.median(t["2"].values())
ratios = [t["1"][r] / t["2"][r] for r in t["1"]]
print("| %s | %.4f | %.4f | **%.2fx** | %.2fx (%.2f-%.2f) | %.3f |" % (
    kind, m1, m2, m1 / m2, statistics.median(ratios), min(ratios), max(ratios),
    sum(one) / (2 * max(two))))
if t["pair"]:
    ceiling = [2 * t["1"][r] / t["pair"][r] for r in t["pair"]]
    share = [t["pair"][r] / (2 * t["2"][r]) for r in t["pair"]]
    with open(pair_table, "a") as f:
        f.write("| %s | %.4f | %.2fx (%.2f-%.2f) | %.2fx | **%.3f** (%.3f-%.3f) |\n" % (
            kind, statistics.median(t["pair"].values()), statistics.median(ceiling),
            min(ceiling), max(ceiling), statistics.median(ratios), statistics.median(share),
            min(share), max(share)))
PY
done
if [ $pair = 1 ]; then
    {
        echo
        echo "Two independent P = 1 runs at once (cores 0 and 1), the slower of each pair; per-round medians (range):"
        echo
        echo "| data | pair s (median) | machine ceiling 2 t(P = 1) / t(pair) | P = 2 speed-up | P = 2 / ceiling |"
        echo "|---|---|---|---|---|"
        cat "$out/pair.md"
    } | tee -a "$out/table.md"
fi
