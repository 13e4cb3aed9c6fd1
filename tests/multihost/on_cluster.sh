#!/bin/bash
# usage: on_cluster.sh SHARED COMMAND ARGS...
# Makes the test cluster (cluster.sh), runs COMMAND with every argument
# `MPIEXEC` replaced by the cluster's mpiexec (ranks round-robin over the
# hosts, TCP only) and TMPDIR set to SHARED (a fresh directory outside
# /tmp, which all hosts see: the command's data, inputs and outputs), then
# takes the cluster down. COMMAND's exit status is the test's.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"
shared=$1
shift
case $(realpath -m "$shared")/ in
/tmp/*) echo "multihost: $shared is under /tmp, which each host has its own; build elsewhere"
    exit 1 ;;
esac
cluster_up || exit 1
rm -rf "$shared" && mkdir -p "$shared" || exit 1
cluster_run_command "$shared" "$LBK_STATE/mpiexec" "$@"
