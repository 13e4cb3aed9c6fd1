#!/usr/bin/env bash
# The check's time guard: with less budget left than a step needs (15 s),
# every timing step is skipped with a line saying so, none is started, and the
# check ends within its budget. (PoCL stands in for the GPU.)
#
# usage: time_guard.sh BUNDLE OUTDIR
set -u
bundle=$1 out=$2 budget=12
fail() { echo "FAIL: $*" >&2; [ -f "$out/log" ] && sed 's/^/  | /' "$out/log" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
[ -e /usr/lib/x86_64-linux-gnu/libpocl.so.2 ] || { echo "SKIP: no PoCL"; exit 77; }

start=$SECONDS
OUT=$out timeout 120 bash "$bundle/check.sh" --cpu-dry-run --timing-only --budget $budget \
    >"$out/log" 2>&1
rc=$?
took=$((SECONDS - start))
echo "check.sh: exit $rc after $took s"
[ $rc -eq 0 ] || fail "exit $rc, expected 0 (skipped timings are not failures)"
[ $took -le $((budget + 5)) ] || fail "took $took s with a $budget s budget"
steps=$(awk -F'\t' '$1 == "time"' "$out/results.tsv" | wc -l)
guarded=$(awk -F'\t' '$1 == "time" && $3 == "SKIP" && $6 == "time guard"' "$out/results.tsv" | wc -l)
[ "$steps" -ge 7 ] || fail "results.tsv lists $steps timing steps, expected all 7"
[ "$guarded" -eq "$steps" ] || fail "$guarded of $steps steps skipped by the time guard"
grep -q "SKIP    tree.build.1e4: time guard" "$out/summary.txt" || fail "no time-guard line"
! grep -q '^== tree' "$out/log" || fail "a timing step started"
echo "PASS: time guard"
