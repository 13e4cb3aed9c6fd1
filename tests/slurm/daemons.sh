# Sourced by the private SLURM clusters (tests/slurm/slurm_harness.sh,
# tests/multihost/slurm_cluster.sh).

# LBK_SLURM_REQUEUE_WAIT=S: a requeued job may start again after about S
# seconds instead of SLURM's 2-3 minutes. The wait is the job credentials'
# lifetime (cred_expire, default 120 s), after which only the scheduler's
# periodic pass (sched_interval, default 60 s) starts the job.
# slurm_requeue_auth: what AuthInfo then adds; slurm_requeue_sched: the
# slurm.conf line. Both print nothing without LBK_SLURM_REQUEUE_WAIT.
slurm_requeue_auth() { echo "${LBK_SLURM_REQUEUE_WAIT:+,cred_expire=$LBK_SLURM_REQUEUE_WAIT}"; }
slurm_requeue_sched() { echo "${LBK_SLURM_REQUEUE_WAIT:+SchedulerParameters=sched_interval=2}"; }

# slurm_port_base SEED: the first of a cluster's two ports, from SEED (the
# harness's pid, so that clusters at once differ), in 20000-31999: below
# Linux's ephemeral ports (32768-60999). A port found free there could be
# taken by another process's outgoing connection before slurmctld bound it
# ("Address already in use"; seen once, port 37828, in a busy test run).
slurm_port_base() { echo $((20000 + ($1 % 6000) * 2)); }

# slurm_controller_alive PID: whether slurmctld (PID) still runs; says so
# where it does not. Each sinfo against no controller waits seconds: a
# slurmctld that had exited (its port taken) made the wait for idle nodes
# last minutes instead of failing.
slurm_controller_alive() {
    kill -0 "$1" 2>/dev/null && return 0
    echo "slurmctld exited while the nodes were coming up" >&2
    return 1
}

# slurm_stop_daemons PID...: stop the daemons these pids name (the ones the
# cluster started, in start order: munged, slurmctld, slurmd...), last
# first and one at a time, each by SIGTERM and, after 5 s, SIGKILL; nothing
# else on the machine is touched. One at a time: a slurmd that ran a job
# talks to slurmctld through munge as it stops, and with all three
# signalled at once it waited out the 5 s for its kill -9 in every test.
slurm_stop_daemons() {
    local pids=("$@") i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[$i]}" 2>/dev/null
        for _ in $(seq 50); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
        kill -9 "${pids[$i]}" 2>/dev/null
    done
}
