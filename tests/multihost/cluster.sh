#!/bin/bash
# A test cluster on one machine, sourced by the tests of this directory:
# LBK_HOSTS hosts, each a network namespace (its own veth on one bridge,
# one address in 10.77.0.0/24), entered by the launch agent with its own
# UTS namespace (hostname = host name) and mount namespace (its own /tmp:
# a per-host directory bind-mounted there). Everything else - the build,
# the inputs and outputs of the shared directory - is the one file system
# all hosts see, as a cluster's shared file system. mpirun runs in the
# machine's own namespace, on the bridge's address, and starts one orted
# per host through lbk_cluster_agent (--mca plm_rsh_agent), with TCP only.
#
# cluster_up: take down what an earlier (possibly aborted) run left, then
# make the hosts; cluster_down: remove them (idempotent, also on EXIT), and
# the daemons listed in $LBK_STATE/root-pids.
# Only one cluster at a time on a machine: cluster_up waits on a lock.
# Exit 77 (CTest's skip) where namespaces cannot be made here.
set -u
LBK_HOSTS=${LBK_HOSTS:-3}
LBK_NET=10.77.0
LBK_BRIDGE=lbkbr0
LBK_STATE=/run/lbknn-multihost
LBK_LOCK=/run/lock/lbknn-multihost.lock
LBK_CLUSTER_SH=$(realpath "${BASH_SOURCE[0]}")

# host i (1-based): namespace and hostname lbkhI, 10.77.0.I on its veth
# lbkhI-eth (inside), lbkhI-br (on the bridge, outside).
cluster_host() { echo "lbkh$1"; }

cluster_down() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(lbkh[0-9]*\).*/\1/p'); do
        # What still runs in a host (an orted or rank of an aborted run) ends
        # with it; only processes of these namespaces, by their ids.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    # Daemons a harness started in the machine's own namespace (slurm_cluster.sh:
    # munged, slurmctld) and recorded as "PID NAME": killed if PID still is NAME.
    local name
    while read -r pid name; do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] && kill -9 "$pid" 2>/dev/null
    done 2>/dev/null <"$LBK_STATE/root-pids"
    ip link del "$LBK_BRIDGE" 2>/dev/null
    # Host veths vanish with their namespace; a half-made one may not have.
    for dev in $(ip -o link show 2>/dev/null | sed -n 's/^[0-9]*: \(lbkh[0-9]*-br\)@.*/\1/p'); do
        ip link del "$dev" 2>/dev/null
    done
    rm -rf "$LBK_STATE"
    return 0
}

cluster_skip_unless_possible() {
    local why=""
    if [ "$(id -u)" -ne 0 ]; then
        why="not root"
    elif ! command -v ip >/dev/null || ! command -v unshare >/dev/null; then
        why="iproute2 or unshare missing"
    elif ! ip netns add lbkh-probe 2>/dev/null; then
        why="network namespaces are not permitted here"
    elif ! ip netns exec lbkh-probe unshare --uts --mount true 2>/dev/null; then
        ip netns del lbkh-probe 2>/dev/null
        why="UTS or mount namespaces are not permitted here"
    fi
    ip netns del lbkh-probe 2>/dev/null
    if [ -n "$why" ]; then
        echo "multihost: skipped: $why"
        exit 77
    fi
}

cluster_up() {
    cluster_skip_unless_possible
    mkdir -p "$(dirname "$LBK_LOCK")"
    exec 9>"$LBK_LOCK"
    flock 9
    cluster_down
    trap cluster_down EXIT
    mkdir -p "$LBK_STATE" || return 1
    ip link add "$LBK_BRIDGE" type bridge || return 1
    ip addr add "$LBK_NET.254/24" dev "$LBK_BRIDGE" && ip link set "$LBK_BRIDGE" up || return 1
    local i h
    for ((i = 1; i <= LBK_HOSTS; i++)); do
        h=$(cluster_host "$i")
        mkdir -p "$LBK_STATE/$h/tmp" && chmod 1777 "$LBK_STATE/$h/tmp"
        ip netns add "$h" &&
            ip link add "$h-br" type veth peer name "$h-eth" &&
            ip link set "$h-eth" netns "$h" &&
            ip link set "$h-br" master "$LBK_BRIDGE" up &&
            ip -n "$h" addr add "$LBK_NET.$i/24" dev "$h-eth" &&
            ip -n "$h" link set "$h-eth" up &&
            ip -n "$h" link set lo up || { echo "multihost: making host $h failed"; return 1; }
    done
    cluster_write_agent
    cluster_write_mpiexec
}

# The launch agent: `agent HOST COMMAND...`, as mpirun calls ssh. It
# enters HOST's network namespace, gives it its own hostname and /tmp, and
# runs the command line there the way sshd would (one shell line).
cluster_write_agent() {
    cat >"$LBK_STATE/agent" <<AGENT
#!/bin/bash
host=\$1
shift
exec ip netns exec "\$host" unshare --uts --mount --propagation private \\
    bash -c 'hostname "\$0" && mount --bind "$LBK_STATE/\$0/tmp" /tmp && exec bash -c "\$1"' \\
    "\$host" "\$*"
AGENT
    chmod +x "$LBK_STATE/agent"
}

# cluster_hosts SLOTS: the --host list, SLOTS slots each.
cluster_hosts() {
    local i list=""
    for ((i = 1; i <= LBK_HOSTS; i++)); do
        list+="${list:+,}$(cluster_host "$i"):$1"
    done
    echo "$list"
}

# cluster_mpirun NP MPIRUN-OR-PROGRAM-ARGS...: NP ranks over the hosts
# round-robin (rank r on host r mod LBK_HOSTS), TCP only, the out-of-band
# channel and the BTL on the cluster's subnet. Each host's /tmp is its own
# (TMPDIR of the caller may be the shared directory: not the ranks').
cluster_mpirun() {
    local np=$1
    shift
    TMPDIR=/tmp mpirun -n "$np" --map-by node \
        --host "$(cluster_hosts $(((np + LBK_HOSTS - 1) / LBK_HOSTS)))" \
        --mca plm_rsh_agent "$LBK_STATE/agent" \
        --mca btl tcp,self --mca btl_tcp_if_include "$LBK_NET.0/24" \
        --mca oob_tcp_if_include "$LBK_NET.0/24" "$@"
}

# $LBK_STATE/mpiexec: `mpiexec -n NP PROGRAM ARGS...` on the cluster, for
# the scripts of tests/mpi and tests/graph, which take an mpiexec.
cluster_write_mpiexec() {
    cat >"$LBK_STATE/mpiexec" <<WRAP
#!/bin/bash
source "$LBK_CLUSTER_SH"
[ "\$1" = -n ] || { echo "cluster mpiexec: usage: -n NP PROGRAM ARGS..." >&2; exit 2; }
np=\$2
shift 2
LBK_HOSTS=$LBK_HOSTS cluster_mpirun "\$np" "\$@"
WRAP
    chmod +x "$LBK_STATE/mpiexec"
}

# cluster_run_command SHARED MPIEXEC COMMAND...: COMMAND with every argument
# `MPIEXEC` replaced by MPIEXEC and TMPDIR set to SHARED, whose exit status
# it exits with; SHARED removed when it passed (kept to look at otherwise).
cluster_run_command() {
    local shared=$1 mpiexec=$2 a status
    shift 2
    local args=()
    for a in "$@"; do
        [ "$a" = MPIEXEC ] && a=$mpiexec
        args+=("$a")
    done
    TMPDIR=$shared "${args[@]}"
    status=$?
    [ "$status" -eq 0 ] && rm -rf "$shared"
    exit "$status"
}
