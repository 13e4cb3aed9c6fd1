#!/bin/bash
# usage: fault.sh kill_host|cut_link LBKNN SHARED   (under on_cluster.sh)
#        fault.sh slow_link COMPARE-ARGS...
# A fault on host lbkh2 while a 3-rank run is in its query phase:
#   kill_host  every process of the host killed (SIGKILL: orted and rank);
#   cut_link   the host's link down (its veth on the bridge);
# then every rank on every host must end within the bound below, with a
# non-zero exit, a message naming the host, and no output file. mpirun
# sees the first at once (the orted's connection closes) and the second
# when TCP keepalive on its connection to the orted gives up; Open MPI's
# default waits 300 s + 9 x 20 s for that, these runs set 2 s + 3 x 1 s
# (docs/cluster.md). The bound, 60 s, is the test's, not a timing
# assertion: past it the run counts as hung and is killed.
#   slow_link  the host's link slowed (netem 20 ms delay and 1 % loss where
#              the kernel has netem, else tbf: a 20 Mbit/s link, queueing
#              delay without loss) for a whole compare_ranks.sh run:
#              outputs identical to one rank; the report's times printed.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/cluster.sh"
mode=$1
shift
if [ "$mode" = slow_link ]; then
    if ip netns exec lbkh2 tc qdisc add dev lbkh2-eth root netem delay 20ms loss 1% 2>/dev/null; then
        echo "lbkh2's link: netem delay 20ms loss 1%"
    else
        ip netns exec lbkh2 tc qdisc add dev lbkh2-eth root tbf rate 20mbit burst 16kb latency 200ms ||
            { echo "no qdisc could slow lbkh2's link"; exit 1; }
        echo "lbkh2's link: this kernel has no netem; tbf rate 20mbit instead (no loss)"
    fi
    export LBK_SHOW_TIMINGS=1
    bash "$here/../mpi/compare_ranks.sh" "$@"
    exit $?
fi
lbknn=$1 shared=$2
export OMPI_MCA_oob_tcp_keepalive_time=2 OMPI_MCA_oob_tcp_keepalive_intvl=1
export OMPI_MCA_oob_tcp_keepalive_probes=3
out=$shared/out
mkdir -p "$out"
# About 20 s on 2 busy cores without a fault: the fault comes long before.
timeout -s KILL 60 "$LBK_STATE/mpiexec" -n 3 "$lbknn" run --quiet --set synthetic.dim=8 \
    --set synthetic.points=100000 --set synthetic.queries=20000 --set knn.engine=brute \
    --set mpi.partition=shard --set device.batch=512 --set output.neighbors="$out/nn.ivecs" \
    --set output.distances="$out/dd.fvecs" --set output.predictions="$out/pred.csv" \
    --set output.report="$out/report.yaml" >"$shared/log" 2>&1 &
run=$!
# Mid-run: every host has its rank, then two seconds more (past set-up).
has_rank() {
    local pid
    for pid in $(ip netns pids "$1" 2>/dev/null); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = lbknn ] && return 0
    done
    return 1
}
for ((i = 0; i < 200; i++)); do
    n=0
    for h in lbkh1 lbkh2 lbkh3; do
        has_rank "$h" && n=$((n + 1))
    done
    [ "$n" -eq 3 ] && break
    sleep 0.1
done
[ "$n" -eq 3 ] || { echo "the ranks did not start on every host"; kill "$run"; exit 1; }
sleep 2
t0=$(date +%s.%N)
case $mode in
kill_host) for pid in $(ip netns pids lbkh2); do kill -9 "$pid" 2>/dev/null; done ;;
cut_link) ip link set lbkh2-br down ;;
*) echo "unknown fault $mode"; exit 2 ;;
esac
wait "$run"
rc=$?
t1=$(date +%s.%N)
# Whatever the launcher's end, no process of the job may outlive it.
sleep 1
left=""
for h in lbkh1 lbkh2 lbkh3; do
    n=$(ip netns pids "$h" | wc -l)
    [ "$n" -eq 0 ] || left+=" $h:$n"
done
sed 's/^/  | /' "$shared/log"
printf 'fault %s on lbkh2: mpirun ended %.1f s later, exit %d\n' "$mode" \
    "$(echo "$t1 - $t0" | bc)" "$rc"
status=0
case $rc in
0) echo "the run finished before the fault hit it"; status=1 ;;
137) echo "the run hung (killed after 60 s)"; status=1 ;;
esac
grep -q 'lbkh2' "$shared/log" || { echo "no message names the host lbkh2"; status=1; }
[ -z "$left" ] || { echo "processes left on hosts:$left"; status=1; }
files=$(ls -A "$out")
[ -z "$files" ] || { echo "outputs left: $files"; status=1; }
[ "$status" -eq 0 ] && echo "ok: every rank ended, non-zero exit, lbkh2 named, no outputs"
exit "$status"
