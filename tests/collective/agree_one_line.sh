#!/bin/sh
# One rank fails: every rank must exit (the CTest TIMEOUT catches a hang) and
# stderr must hold exactly one error line, from the failing rank, plus one
# "stopping" line that names it.
# usage: agree_one_line.sh MPIEXEC NP TEST_BINARY
set -u
mpiexec=$1 np=$2 bin=$3
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
"$mpiexec" -n "$np" "$bin" agree 2>"$err"
rc=$?
cat "$err" >&2
[ "$rc" -eq 0 ] || { echo "test program failed (rc $rc)"; exit 1; }
last=$((np - 1))
errors=$(grep -c 'error:' "$err")
[ "$errors" -eq 1 ] || { echo "want 1 error line, got $errors"; exit 1; }
if [ "$np" -gt 1 ]; then
    grep -q "^lbknn\[rank $last\]: error: injected failure" "$err" ||
        { echo "error line lacks the rank prefix"; exit 1; }
    n=$(grep -c "stopping: rank $last failed (input error)" "$err")
    [ "$n" -eq 1 ] || { echo "want 1 line naming rank $last, got $n"; exit 1; }
fi
echo ok
