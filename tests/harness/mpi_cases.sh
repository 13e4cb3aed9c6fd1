#!/usr/bin/env bash
# Every case of an MPI test program (lbk_test_mpi.h) in one launch:
# `MPIEXEC -n NP PROGRAM --all`, whose rank 0 says "CASE on NP ranks: ok"
# after each case. Passes only when every case `PROGRAM --list` names said
# so: a case that failed is named with NP, and so is one that no verdict
# came for (the launch crashed in it or before it, or a case ended the
# process), as a test per case would have been. The programs that register
# a test per case have the build check their tables instead
# (check_cases.cmake); here the list is read when the test runs.
#
# usage: mpi_cases.sh MPIEXEC NP PROGRAM
# One case alone, to debug it: MPIEXEC -n NP PROGRAM CASE.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: mpi_cases.sh MPIEXEC NP PROGRAM" >&2; exit 2; }
mpiexec=$1 np=$2 prog=$3
mapfile -t cases < <("$prog" --list)
[ ${#cases[@]} -gt 0 ] || { echo "$prog --list names no case"; exit 1; }
out=$(mktemp "${TMPDIR:-/tmp}/lbk-mpi-cases.XXXXXX")
trap 'rm -f "$out"' EXIT
rc=0
"$mpiexec" -n "$np" "$prog" --all | tee "$out" || rc=$?

failed=() unfinished=()
for c in "${cases[@]}"; do
    if grep -qxF "$c on $np ranks: ok" "$out"; then
        continue
    elif grep -qxF -e "$c on $np ranks: FAILED" -e "$c on $np ranks: skipped" "$out"; then
        failed+=("$c")
    else
        unfinished+=("$c")
    fi
done
status=0
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED or skipped on $np ranks: ${failed[*]}"
    status=1
fi
if [ ${#unfinished[@]} -gt 0 ]; then
    echo "no verdict on $np ranks (the launch ended in the first of these or before it):" \
        "${unfinished[*]}"
    status=1
fi
if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
    echo "every case said ok, but the launch exited $rc"
    status=1
fi
[ "$status" -eq 0 ] && echo "all ${#cases[@]} cases ok on $np ranks"
exit "$status"
