#!/bin/bash
# The spatial partition's query phase from one rank to two, in seconds:
# each rank bound to its own core and given one PoCL thread, P = 1 also
# under mpirun, P = 1 and P = 2 interleaved round by round (the order
# alternating), the medians over the rounds. The figure is the report's
# `search` (rank 0's batch loop: routing, both phases, the merges and the
# vote), nothing of the read, device or build phases.
#
#   bench/wall_scaling.sh [--rounds N (9)] [--data uniform|clustered|both]
#                         [--points N] [--queries N] [--cluster] [--out DIR]
#
# --cluster: the same over the TCP-only test cluster of tests/multihost
# (two network namespaces, no shared-memory transport; needs root and
# iproute2): rank r on host r + 1, pinned to core r by taskset (one host's
# orted cannot see the other's binding). Without it: mpirun --bind-to core
# on this host, Open MPI's shared-memory transport.
#
# Data: bench_points (uniform, or 64 blobs of sigma 0.01 with the queries
# in the same blobs), 1e6 3-D references and 1e5 queries by default, K = 16,
# the k-d tree. Timing: run it on an otherwise idle machine; the per-round
# ratios and their range come out too, since a 2-vCPU VM moves a 0.25 s
# phase by +-20 % between runs. The table goes to stdout and DIR/table.md
# (default bench/out/wall_scaling/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=9 data=both pts=1000000 qs=100000 cluster=0 out=$root/bench/out/wall_scaling
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    --data) data=$2; shift ;;
    --points) pts=$2; shift ;;
    --queries) qs=$2; shift ;;
    --cluster) cluster=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--rounds N] [--data uniform|clustered|both] [--points N] [--queries N] [--cluster] [--out DIR]" >&2
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

for kind in $kinds; do
    d=$out/data/$kind-$pts-$qs
    [ -s "$d/reference.fvecs" ] || "$GEN" "$d" "$kind" "$pts" "$((qs > 0 ? qs : 1))" 3 >/dev/null
    : >"$out/$kind.times"
    for ((r = 1; r <= rounds; r++)); do
        order="1 2"
        [ $((r % 2)) = 0 ] && order="2 1"
        for np in $order; do
            rep=$out/$kind.p$np.r$r.yaml
            launch "$np" run -q "$d/job.yaml" --set knn.k=16 --set knn.engine=kdtree \
                --set mpi.partition=spatial --set output.predictions= --set output.report="$rep"
            echo "$r $np $(awk '$1 == "search:" {print $2}' "$rep") $rep" >>"$out/$kind.times"
        done
    done
    /usr/bin/python3 - "$kind" "$out/$kind.times" <<'PY' | tee -a "$out/table.md"
import re, statistics, sys
kind, path = sys.argv[1], sys.argv[2]
t = {1: {}, 2: {}}
reports = {}
for line in open(path):
    r, p, s, rep = line.split()
    t[int(p)][int(r)] = float(s)
    reports[(int(p), int(r))] = rep
def evals(rep):
    return [int(m) for m in re.findall(r"distance_evals: (\d+)", open(rep).read())]
one, two = evals(reports[(1, 1)]), evals(reports[(2, 1)])
m1, m2 = statistics.median(t[1].values()), statistics.median(t[2].values())
ratios = [t[1][r] / t[2][r] for r in t[1]]
print("| %s | %.4f | %.4f | **%.2fx** | %.2fx (%.2f-%.2f) | %.3f |" % (
    kind, m1, m2, m1 / m2, statistics.median(ratios), min(ratios), max(ratios),
    sum(one) / (2 * max(two))))
PY
done
