#!/bin/bash
# A throw-away single-node SLURM cluster for one test: munged, slurmctld and
# slurmd started from a temporary directory with their own ports and socket,
# stopped again (trap) whatever happens. Installs nothing, touches no system
# configuration; skips (exit 77) where SLURM or munge is missing or we are not
# root (slurmd must be root to launch jobs as the submitting user).
#
# usage: slurm_harness.sh COMMAND [ARGS...]
#   Runs COMMAND with SLURM_CONF pointing at the private cluster, with
#   LBK_SLURM_DIR set to a scratch directory inside it. COMMAND's exit code is
#   the test's.
set -u

skip() { echo "SKIP: $*"; exit 77; }
for tool in munged slurmctld slurmd sbatch srun sinfo scontrol; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || skip "$tool not installed"
done
[ "$(id -u)" -eq 0 ] || skip "needs root to run slurmd"
export PATH="$PATH:/usr/sbin"

dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-slurm.XXXXXX") || exit 1
pids=()
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/daemons.sh"
cleanup() {
    slurm_stop_daemons "${pids[@]}"
    if [ "${LBK_SLURM_KEEP:-0}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$dir"/{munge,state,spool,log,work}
chmod 711 "$dir/munge"

# munge: a fresh key and a private socket, so an already running munged (or
# none) does not matter.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge/munge.key"
sock="$dir/munge/munge.socket"
munged -F -f --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" \
    --log-file="$dir/log/munged.log" >"$dir/log/munged.out" 2>&1 &
pids+=($!)

# Ports: derived from our pid so that parallel tests (and a real cluster on
# 6817/6818) do not collide; moved along if taken. Taken means a listener on
# any address: slurmctld binds them all, so the multihost cluster's, on its
# bridge's address and not yet gone when the test before this one ended,
# made it fail with "Address already in use" although loopback answered
# nothing (ss where iproute2 has it; the loopback probe in any case).
port_free() {
    [ -z "$(ss -Htln "sport = :$1" 2>/dev/null)" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
base=$(slurm_port_base $$)
while ! port_free "$base" || ! port_free $((base + 1)); do base=$((base + 2)); done

node=$(hostname -s)
# FirstJobId=$base: SLURM's PMIx plugin makes /tmp/spmix_appdir_UID_JOB.STEP,
# so two clusters at once (two build trees' tests) that both number their
# first job 1 collided there ("File exists", the step never launched).
# LBK_SLURM_REQUEUE_WAIT: a requeued job's shorter wait (daemons.sh).
# The node's real CPU and memory counts, as slurmd itself sees them.
hw=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //')
# MinJobAge=4: `sbatch --wait` sleeps 2 s, then 4 times longer while that
# stays under MinJobAge/2 (up to 32 s): with 30 it saw an 11 s job end
# 42 s after it began; with 4 it looks every 2 s, and a finished job's
# record still outlives one look.
cat >"$dir/slurm.conf" <<CONF
ClusterName=lbktest
FirstJobId=$base
SlurmctldHost=$node(127.0.0.1)
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
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
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
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=lbk Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
: >"$dir/plugstack.conf"
export SLURM_CONF="$dir/slurm.conf"

for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { cat "$dir/log/munged.log" >&2; echo "munged did not start"; exit 1; }

slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$dir/log/slurmd.out" 2>&1 &
pids+=($!)

state=""
for _ in $(seq 150); do
    slurm_controller_alive "${pids[1]}" || break
    state=$(sinfo -h -n "$node" -o %T 2>/dev/null | head -n 1)
    [ "$state" = idle ] && break
    sleep 0.2
done
if [ "$state" != idle ]; then
    echo "node never became idle (state '$state'); daemon logs:" >&2
    tail -n 20 "$dir"/log/* >&2
    exit 1
fi

export LBK_SLURM_DIR="$dir/work"
"$@"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    echo "--- slurmd log (tail) ---" >&2
    tail -n 30 "$dir/log/slurmd.log" >&2
fi
exit "$rc"
