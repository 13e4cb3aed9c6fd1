#!/bin/sh
# run_oclgrind.sh PROGRAM CASE: one case of PROGRAM on Oclgrind's simulated
# device with its data-race, uninitialised-value and API checks on (bounds
# are always checked); any finding in its log fails the test. Skipped (77)
# without Oclgrind (Debian package oclgrind).
set -u
prog=$1 case=$2
command -v oclgrind >/dev/null 2>&1 || { echo "SKIP: oclgrind is not installed"; exit 77; }
log=$(mktemp "${TMPDIR:-/tmp}/lbk-oclgrind.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
oclgrind --data-races --uninitialized --check-api --log "$log" "$prog" "$case"
rc=$?
if [ -s "$log" ]; then
    echo "Oclgrind found problems:"
    cat "$log"
    exit 1
fi
exit "$rc"
