#!/bin/bash
# usage: slurm_cluster.sh SHARED COMMAND ARGS...
# A multi-node SLURM on the one-machine test cluster (cluster.sh): one
# munged and slurmctld in the machine's own namespace (slurmctld on the
# bridge's address 10.77.0.254), one slurmd per host lbkhI, started inside
# that host's network, UTS and mount namespaces (hostname lbkhI, its own
# /tmp) as NodeName=lbkhI NodeAddr=10.77.0.I. All daemons' files (munge key
# and socket, slurm.conf, state, spools, logs) are under the cluster's state
# directory, which every host sees; munge's socket is a path, so the hosts'
# slurmds reach it across network namespaces. srun and sbatch run in the
# machine's namespace and reach the slurmds over the bridge.
#
# Runs COMMAND with SLURM_CONF set, TMPDIR=SHARED (a fresh directory outside
# /tmp) and every argument `MPIEXEC` replaced by a wrapper that runs
# `-n NP PROGRAM run ARGS...` as a batch job of jobs/multi-node-gpu.sbatch
# across the 3 nodes (the MPIEXEC wrapper below). Everything is stopped by
# its pid (and the hosts' processes with their namespaces) on any exit;
# after a kill -9 of this script, by the next cluster_up (cluster.sh's
# root-pids). Exit 77 where namespaces, SLURM, munge or root are missing.
#
# Differences from tests/slurm/slurm_harness.sh (single node, loopback):
# the controller's address, three nodes with their own addresses, one fake
# gpu per node (gres File=/dev/null: the GPU script's --gpus-per-task=1 is
# honoured as written; PoCL does not look at CUDA_VISIBLE_DEVICES).
set -u
here=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$here/cluster.sh"
source "$here/../slurm/daemons.sh"
shared=$1
shift
case $(realpath -m "$shared")/ in
/tmp/*) echo "multihost: $shared is under /tmp, which each host has its own; build elsewhere"
    exit 1 ;;
esac
export PATH="$PATH:/usr/sbin"
for tool in munged slurmctld slurmd sbatch srun sinfo scontrol; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done

cluster_up || exit 1
export LBK_HOSTS
dir=$LBK_STATE/slurm
pids=()
slurm_down() {
    slurm_stop_daemons "${pids[@]}"
    if [ "${LBK_SLURM_KEEP:-0}" = 1 ]; then cp -r "$dir" "$shared.slurm" && echo "kept $shared.slurm"; fi
    cluster_down
}
trap slurm_down EXIT
trap 'exit 1' INT TERM
rm -rf "$shared" && mkdir -p "$shared" "$dir"/{munge,state,log} || exit 1
chmod 711 "$dir/munge"

dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge/munge.key"
sock=$dir/munge/munge.socket
munged -F -f --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" \
    --log-file="$dir/log/munged.log" >"$dir/log/munged.out" 2>&1 9>&- &
pids+=($!)
# For the next cluster_up should this script be killed outright (no trap);
# the daemons do not hold cluster.sh's lock (fd 9), or that cluster_up would
# wait for them forever.
echo "$! munged" >>"$LBK_STATE/root-pids"

# Ports: slurmctld's on the bridge's address, the slurmds' on each host's
# own (the same port number on every host, as on a real cluster).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# FirstJobId=$base: job ids of their own (tests/slurm/slurm_harness.sh says why).
# LBK_SLURM_REQUEUE_WAIT: a requeued job's shorter wait (tests/slurm/daemons.sh).
base=$(slurm_port_base $$)
while ! port_free "$base"; do base=$((base + 2)); done
ctl=$(hostname -s)
hw=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //' -e 's/ UpTime=.*//')
# MinJobAge=4: `sbatch --wait` sleeps 2 s, then 4 times longer while that
# stays under MinJobAge/2 (up to 32 s): with 30 it saw an 11 s job end
# 42 s after it began; with 4 it looks every 2 s, and a finished job's
# record still outlives one look.
cat >"$dir/slurm.conf" <<CONF
ClusterName=lbkmulti
FirstJobId=$base
SlurmctldHost=$ctl($LBK_NET.254)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock$(slurm_requeue_auth)
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/builtin
$(slurm_requeue_sched)
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
PlugStackConfig=$dir/plugstack.conf
MinJobAge=4
GresTypes=gpu
NodeName=lbkh[1-$LBK_HOSTS] NodeAddr=$LBK_NET.[1-$LBK_HOSTS] $hw Gres=gpu:1 State=UNKNOWN
PartitionName=lbk Nodes=lbkh[1-$LBK_HOSTS] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
echo "NodeName=lbkh[1-$LBK_HOSTS] Name=gpu File=/dev/null" >"$dir/gres.conf"
: >"$dir/plugstack.conf"
export SLURM_CONF=$dir/slurm.conf

for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { cat "$dir/log/munged.log" >&2; echo "munged did not start"; exit 1; }

slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 9>&- &
pids+=($!)
echo "$! slurmctld" >>"$LBK_STATE/root-pids"
# Each slurmd enters a host as the launch agent does (nsenter and unshare
# exec, so the pid is slurmd's); its jobs inherit the host's namespaces.
# nsenter, not ip netns exec: slurmd initialises its cgroup plugin even with
# proctrack/linuxproc, and ip netns exec mounts a fresh /sys without
# /sys/fs/cgroup ("No filesystem mounted on /sys/fs/cgroup").
for ((i = 1; i <= LBK_HOSTS; i++)); do
    h=$(cluster_host "$i")
    mkdir -p "$dir/spool/$h"
    nsenter --net="/run/netns/$h" unshare --uts --mount --propagation private \
        bash -c 'hostname "$0" && mount --bind "$1/$0/tmp" /tmp &&
                 exec slurmd -D -f "$2" -N "$0"' "$h" "$LBK_STATE" "$SLURM_CONF" \
        >"$dir/log/slurmd-$h.out" 2>&1 9>&- &
    pids+=($!)
done

idle=0
for _ in $(seq 150); do
    slurm_controller_alive "${pids[1]}" || break
    idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
    [ "$idle" -eq "$LBK_HOSTS" ] && break
    sleep 0.2
done
if [ "$idle" -ne "$LBK_HOSTS" ]; then
    echo "only $idle of $LBK_HOSTS nodes became idle; daemon logs:" >&2
    sinfo -N >&2
    tail -n 20 "$dir"/log/* >&2
    exit 1
fi

# $dir/job-env, sourced before an sbatch: what the jobs' ranks need from
# the environment sbatch exports (TCP between the ranks on the cluster's
# subnet, each host's own /tmp).
cat >"$dir/job-env" <<ENV
export TMPDIR=/tmp OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$LBK_NET.0/24 \\
    OMPI_MCA_oob_tcp_if_include=$LBK_NET.0/24 PMIX_MCA_ptl_tcp_if_include=$LBK_NET.0/24
ENV

# The MPIEXEC wrapper: `-n NP PROGRAM run ARGS...` as a batch job of the
# GPU script itself on all nodes, NP / nodes tasks each. The options are the
# ones a site adapts on the command line (the cores per task: these nodes
# have 2); the CPU device and job-env come through the environment sbatch
# exports.
cat >"$dir/mpiexec" <<WRAP
#!/bin/bash
[ "\$1" = -n ] && [ "\$4" = run ] || { echo "slurm mpiexec: usage: -n NP PROGRAM run ARGS..." >&2; exit 2; }
np=\$2 program=\$3
shift 4
work=\${TMPDIR:-/tmp}
out=\$(mktemp "\$work/lbk-job.XXXXXX")
source "$dir/job-env"
LBKNN=\$program LBK_DEVICE_TYPE=cpu timeout 150 sbatch --wait --time=3 --nodes=$LBK_HOSTS \\
    --ntasks-per-node=\$((np / $LBK_HOSTS)) \\
    --cpus-per-task=1 --output="\$out" --chdir="\$work" \\
    "$here/../../jobs/multi-node-gpu.sbatch" "\$@"
rc=\$?
cat "\$out"
[ "\$rc" -eq 0 ] || { squeue -a; tail -n 15 "$dir"/log/slurmd-lbkh*.log "$dir"/log/slurmctld.log; } >&2
exit "\$rc"
WRAP
chmod +x "$dir/mpiexec"

cluster_run_command "$shared" "$dir/mpiexec" "$@"
