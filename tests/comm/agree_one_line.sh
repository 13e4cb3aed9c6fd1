#!/usr/bin/env bash
# Every case of test_collective_mpi in one launch (tests/harness/mpi_cases.sh),
# and what its stderr holds: in the agree case one rank fails on purpose,
# and every rank must go on (the CTest TIMEOUT catches a hang), with
# exactly one error line, from the failing rank, plus one "stopping" line
# that names it. No other case may write an error line.
# usage: agree_one_line.sh MPIEXEC NP TEST_BINARY
set -euo pipefail
mpiexec=$1 np=$2 bin=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
err=$(mktemp "${TMPDIR:-/tmp}/lbk-agree.XXXXXX")
trap 'rm -f "$err"' EXIT
rc=0
bash "$here/../harness/mpi_cases.sh" "$mpiexec" "$np" "$bin" 2>"$err" || rc=$?
cat "$err" >&2
[ "$rc" -eq 0 ] || { echo "test program failed (rc $rc)"; exit 1; }
last=$((np - 1))
errors=$(grep -c 'error:' "$err" || true)
[ "$errors" -eq 1 ] || { echo "want 1 error line, got $errors"; exit 1; }
if [ "$np" -gt 1 ]; then
    grep -q "^lbknn\[rank $last\]: error: injected failure" "$err" ||
        { echo "error line lacks the rank prefix"; exit 1; }
    n=$(grep -c "stopping: rank $last failed (input error)" "$err" || true)
    [ "$n" -eq 1 ] || { echo "want 1 line naming rank $last, got $n"; exit 1; }
fi
echo ok
