#!/bin/bash
# usage: topology.sh MPIEXEC SHARED (under on_cluster.sh)
# The cluster is what the other tests assume: 4 ranks on 3 hosts, rank r
# on host lbkh(r mod 3 + 1), which is its hostname; one address per host,
# in 10.77.0.0/24 and no other but loopback; a /tmp of its own (a file one
# rank writes there is seen by the ranks of its host only, and not outside
# the cluster); the shared directory seen by all.
set -u
mpiexec=$1 shared=$2
probe=$shared/probe.sh
cat >"$probe" <<'PROBE'
r=$OMPI_COMM_WORLD_RANK
addr=$(ip -o -4 addr show scope global | awk '{print $4}' | tr '\n' ' ')
touch "/tmp/mark-$r"
sleep 1 # every rank has made its mark before any looks
echo "$r $(hostname) ${addr% } $(ls /tmp | grep -c '^mark-')" >"$1/rank-$r"
PROBE
"$mpiexec" -n 4 bash "$probe" "$shared" || { echo "mpiexec -n 4 failed"; exit 1; }
status=0
for r in 0 1 2 3; do
    h=$((r % 3 + 1))
    # Hosts 1 has ranks 0 and 3: two marks; the others one.
    marks=1
    [ "$h" -eq 1 ] && marks=2
    want="$r lbkh$h 10.77.0.$h/24 $marks"
    got=$(cat "$shared/rank-$r" 2>/dev/null)
    [ "$got" = "$want" ] || { echo "rank $r: '$got', want '$want'"; status=1; }
done
ls /tmp/mark-* >/dev/null 2>&1 && { echo "a rank's /tmp is the machine's own"; status=1; }
[ "$status" -eq 0 ] && echo "ok: 4 ranks on 3 hosts, own hostnames, addresses and /tmp"
exit "$status"
