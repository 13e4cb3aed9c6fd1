#!/bin/bash
# What the work counters cost: the query phase of two lbknn binaries, one
# built without the counters (BASE) and one with them (NEW), on the same
# job, in interleaved rounds (BASE, NEW, NEW, BASE, ...) so that a slow
# spell of a shared machine hits both alike; one warm-up run of each first
# (the kernels' compilation). Prints each binary's median query phase and
# NEW / BASE - 1, and the median of the rounds' own NEW / BASE - 1.
#
#   bench/counters_overhead.sh BASE NEW JOB [ROUNDS] [--set key=value ...]
#
# One rank, one PoCL thread (POCL_MAX_PTHREAD_COUNT=1): the least noise a
# two-core machine gives. JOB: e.g. a bench_points directory's job.yaml.
set -euo pipefail
base=$1 new=$2 job=$3
rounds=${4:-9}
shift 3
[ $# -gt 0 ] && shift
extra=("$@")
out=$(mktemp -d "${TMPDIR:-/tmp}/lbk-overhead.XXXXXX")
trap 'rm -rf "$out"' EXIT
export POCL_MAX_PTHREAD_COUNT=1
one() { # binary report
    "$1" run --quiet "$job" --set knn.k=16 --set knn.engine=kdtree ${extra[@]+"${extra[@]}"} \
        --set output.predictions= --set "output.report=$2" >/dev/null
}
query_s() { sed -n '/^timings_s:/,/^[a-z]/s/^  query: {min: \([0-9.]*\),.*/\1/p' "$1"; }
one "$base" "$out/warm-base.yaml"
one "$new" "$out/warm-new.yaml"
for ((i = 1; i <= rounds; i++)); do
    # Odd rounds BASE first, even rounds NEW first: no order bias.
    if ((i % 2)); then
        one "$base" "$out/base.$i.yaml"
        one "$new" "$out/new.$i.yaml"
    else
        one "$new" "$out/new.$i.yaml"
        one "$base" "$out/base.$i.yaml"
    fi
    echo "round $i: base $(query_s "$out/base.$i.yaml") s, new $(query_s "$out/new.$i.yaml") s" >&2
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
b=$(for f in "$out"/base.*.yaml; do query_s "$f"; done | median)
n=$(for f in "$out"/new.*.yaml; do query_s "$f"; done | median)
# The median of each round's own ratio too: a round's two runs share its
# spell of load, so the pairs' ratio is less noisy than the medians'.
pr=$(for ((i = 1; i <= rounds; i++)); do
    awk -v b="$(query_s "$out/base.$i.yaml")" -v n="$(query_s "$out/new.$i.yaml")" \
        'BEGIN { print n / b }'
done | median)
awk -v b="$b" -v n="$n" -v r="$rounds" -v pr="$pr" 'BEGIN {
    printf "query phase, median of %d interleaved rounds: base %.4f s, counters %.4f s, overhead %+.2f %% (median of the rounds own ratios: %+.2f %%)\n", r, b, n, 100 * (n / b - 1), 100 * (pr - 1) }'
