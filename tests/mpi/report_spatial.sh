#!/bin/bash
# The partition in the report: `auto` resolves to spatial for the k-d tree on
# several ranks and to row shards for brute force or one rank, saying why;
# a spatial run's report has every rank's points, queries (phase 1 and 2),
# bytes and memory peaks, whose counts add up to the input's, and the
# fraction of queries that needed phase 2.
# usage: report_spatial.sh LBKNN MPIEXEC
set -u
lbknn=$1 mpiexec=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-report.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
data=(--quiet --set synthetic.points=3000 --set synthetic.queries=301 --set synthetic.dim=3)
status=0
for run in 'kdtree 2 spatial' 'brute 2 shard' 'kdtree 1 shard'; do
    set -- $run
    "$mpiexec" -n "$2" "$lbknn" run "${data[@]}" --set knn.engine="$1" \
        --set output.report="$dir/r.yaml" || { echo "$1 on $2 ranks failed"; exit 1; }
    grep -q "^partition: {name: $3, reason: \"auto: " "$dir/r.yaml" ||
        { echo "$1 on $2 ranks: want auto -> $3: $(grep '^partition' "$dir/r.yaml")"; status=1; }
done

"$mpiexec" -n 3 "$lbknn" run "${data[@]}" --set knn.engine=kdtree \
    --set output.report="$dir/r.yaml" || { echo "3-rank run failed"; exit 1; }
stats='^  - {rank: [0-2], points: \([0-9]*\), queries_phase1: \([0-9]*\), '
stats+='queries_phase2: \([0-9]*\), queries_owned: \([0-9]*\), bytes_sent: [0-9]*, '
stats+='bytes_received: [0-9]*, distance_evals: [1-9][0-9]*, nodes_visited: [1-9][0-9]*, '
stats+='queries_answered: [0-9]*, '
stats+='peak_rss_bytes: [1-9][0-9]*, peak_device_bytes: [1-9][0-9]*, reference_device_bytes: [1-9][0-9]*, reference_host_bytes: [1-9][0-9]*}$'
[ "$(grep -c "$stats" "$dir/r.yaml")" -eq 3 ] ||
    { echo "want 3 rank_stats lines:"; sed -n '/^rank_stats:/,/^[a-z]/p' "$dir/r.yaml"; status=1; }
sum() { sed -n "s/$stats/\\$1/p" "$dir/r.yaml" | awk '{ s += $1 } END { print s + 0 }'; }
[ "$(sum 1)" -eq 3000 ] || { echo "points add up to $(sum 1), not 3000"; status=1; }
[ "$(sum 2)" -eq 301 ] || { echo "phase-1 queries add up to $(sum 2), not 301"; status=1; }
[ "$(sum 4)" -eq 301 ] || { echo "owned queries add up to $(sum 4), not 301"; status=1; }
extra=$(sed -n 's/^spatial: {.*queries_phase2: \([0-9]*\), phase2_fraction: \([0-9.]*\)}$/\1 \2/p' \
    "$dir/r.yaml")
[ -n "$extra" ] || { echo "no spatial line:"; grep '^spatial' "$dir/r.yaml"; status=1; }
set -- $extra
# Phase 2 queries counted by their owners never exceed the phase-2 work.
[ "${1:-0}" -le "$(sum 3)" ] || { echo "$1 owners' phase-2 queries > $(sum 3) answered"; status=1; }
[ "$status" -eq 0 ] && echo "ok: partitions resolved and the spatial report adds up"
exit "$status"
