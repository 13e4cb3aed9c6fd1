#!/bin/bash
# The worker threads of each rank's CPU device, end to end, in the summary and
# the report (per rank: cpu_threads and cpu_threads_source), 2 ranks:
#   environment  POCL_MAX_PTHREAD_COUNT=3 set by the user: every rank says 3,
#                from the environment (lbknn must not overwrite the value)
#   node_share   unset: every rank says its own share of the node, computed
#                here from the documented rule: min(online cores / ranks on
#                the node, cores the rank is bound to), at least 1; when that
#                is every online core nothing is set ("device default")
# Run behind `lbk_opencl_gate --type cpu` (CMakeLists.txt), which skips it
# (77) without an OpenCL CPU device: the ICD loader says, not lbknn.
#
# usage: cpu_threads.sh LBKNN MPIEXEC environment|node_share
set -u
lbknn=$1 mpiexec=$2 mode=$3 np=2
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-threads.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

# Each rank records the cores it may run on, then becomes lbknn with the same
# affinity and environment.
rank_run() {
    "$mpiexec" -n "$np" sh -c \
        'env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc >"nproc.$OMPI_COMM_WORLD_RANK"; exec "$0" "$@"' \
        "$lbknn" run --set synthetic.points=300 --set synthetic.queries=30 --set device.type=cpu \
        --set output.report=report.yaml >stdout.txt 2>stderr.txt
}
case "$mode" in
environment) POCL_MAX_PTHREAD_COUNT=3 rank_run ;;
node_share) unset POCL_MAX_PTHREAD_COUNT; rank_run ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac || { cat stdout.txt stderr.txt; echo "the $np-rank run failed"; exit 1; }

online=$(getconf _NPROCESSORS_ONLN)
status=0
for ((r = 0; r < np; r++)); do
    if [ "$mode" = environment ]; then
        want=3 source=environment
    else
        bound=$(cat "nproc.$r") share=$((online / np))
        [ "$bound" -lt "$share" ] && share=$bound
        [ "$share" -lt 1 ] && share=1
        want=$share source='node share'
        # The whole node: PoCL's own default, whatever number the device reports.
        [ "$share" -ge "$online" ] && want='[1-9][0-9]*' source='device default'
    fi
    grep -Eq "^  - \{rank: $r, device: \".*\", cpu_threads: $want, cpu_threads_source: $source\}\$" \
        report.yaml || { echo "report: rank $r lacks cpu_threads: $want ($source)"; status=1; }
    grep -Eq "^  device     rank $r: .*  cpu_threads=$want \($source\)\$" stdout.txt ||
        { echo "summary: rank $r lacks cpu_threads=$want ($source)"; status=1; }
done
if [ "$status" -ne 0 ]; then
    grep -E '^  - \{rank|^  device' report.yaml stdout.txt
fi
[ "$status" -eq 0 ] && echo "ok: $mode (online $online)"
exit "$status"
