#!/bin/bash
# usage: in_turn.sh COMMAND... :: COMMAND... [:: ...]
# Each command in turn, on one cluster (on_cluster.sh: a cluster's start
# costs more than a small run); exits with the first failing one's status.
set -u
cmd=()
run() {
    [ ${#cmd[@]} -gt 0 ] || return 0
    "${cmd[@]}" || exit $?
    cmd=()
}
for a in "$@"; do
    if [ "$a" = "::" ]; then run; else cmd+=("$a"); fi
done
run
