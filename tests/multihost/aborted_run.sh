#!/bin/bash
# usage: aborted_run.sh SHARED
# What a killed run leaves - the bridge, one host's namespace with its veth
# and a process still running in it, the per-host directories - does not
# stop the next cluster: cluster_up clears it (the leftover process ends)
# and the topology check passes on the new cluster; afterwards nothing of
# either is left.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/cluster.sh"
shared=$1
cluster_skip_unless_possible
ip link add "$LBK_BRIDGE" type bridge 2>/dev/null
ip netns add lbkh2 && ip link add lbkh2-br type veth peer name lbkh2-eth &&
    ip link set lbkh2-eth netns lbkh2 || { echo "could not make the leftovers"; exit 1; }
mkdir -p "$LBK_STATE/lbkh2/tmp"
ip netns exec lbkh2 sleep 300 &
stray=$!
sleep 0.2
status=0
bash "$here/on_cluster.sh" "$shared" bash "$here/topology.sh" MPIEXEC "$shared" || status=1
sleep 0.2
if kill -0 "$stray" 2>/dev/null; then
    echo "the leftover process in lbkh2 still runs"; kill "$stray"; status=1
fi
left=$(ip netns list | grep -c '^lbkh')
[ "$left" -eq 0 ] || { echo "$left host namespaces left"; status=1; }
ip link show "$LBK_BRIDGE" >/dev/null 2>&1 && { echo "bridge left"; status=1; }
[ -e "$LBK_STATE" ] && { echo "$LBK_STATE left"; status=1; }
# Whatever the verdict, the next test starts from nothing: when the cluster
# never came up (a build under /tmp, say), the leftovers made above are still
# there.
cluster_down
[ "$status" -eq 0 ] && echo "ok: leftovers of an aborted run cleared, nothing left after"
exit "$status"
