#!/bin/bash
# jobs/long-run.sbatch through the private cluster: a job stopped by SIGUSR1
# (exit 3, checkpoint written), requeued by its own script, restarted with
# SLURM_RESTART_COUNT 1 and --resume, ends with outputs byte-identical (cmp)
# to a one-shot run and equal to the independent oracle (verify_outputs).
# Runs inside slurm_harness.sh or tests/multihost/slurm_requeue.sh
# (LBK_SLURM_DIR, SLURM_CONF set).
# usage: requeue.sh LBKNN VERIFY SBATCH_SCRIPT NTASKS MODE QUERIES
#   MODE signal:    `scancel --signal=USR1 --batch` once the first checkpoint
#                   exists (what SLURM's --signal=B:USR1 does, without
#                   waiting for the time limit)
#   MODE timelimit: --time=2 --signal=B:USR1@115: SLURM's own warning
#                   signal, which its time-limit check (about every 30 s)
#                   sends 5 to 35 s into each start: a run of about a
#                   minute is stopped and requeued once or more
#   MODE resize:    as signal, and the requeued job, while it waits, is
#                   given one task (scontrol update NumTasks=1): it
#                   resumes on another rank count (the private cluster
#                   has one node; MODE nodes changes the node count)
#   MODE nodes:     as resize on several nodes (tests/multihost's SLURM):
#                   NTASKS nodes, one task each, requeued on 1 node with 1
#                   task (NumNodes=1 NumTasks=1); the job's NodeList while
#                   it ran, as SLURM and the script's log saw it, is
#                   checked for both starts
set -u
lbknn=$1 verify=$2 script=$3 ntasks=$4 mode=$5 queries=$6
cd "$LBK_SLURM_DIR" || exit 1
states=""
fail() {
    echo "FAIL: $*"
    [ -n "$states" ] && echo "job states seen:$states"
    [ -f job.out ] && { echo "--- job.out ---"; cat job.out; }
    tail -n 20 "$(dirname "$SLURM_CONF")"/log/slurmctld.log
    exit 1
}
# Small reference set, one query per batch: many short batches, so the run
# lasts long enough to be signalled while the oracle's work stays small.
"$lbknn" generate data --points 500 --queries "$queries" --dim 3 >/dev/null ||
    fail "lbknn generate failed"
mkdir one batch
args=(data/job.yaml --set knn.engine=brute --set device.batch=1 --set mpi.partition=shard
    --set mpi.merge=reduce)
out() {
    echo --set "output.predictions=$1/p.csv" --set "output.probabilities=$1/proba.csv" \
        --set "output.neighbors=$1/n.ivecs" --set "output.distances=$1/d.fvecs" \
        --set "output.report=$1/report.yaml"
}
# shellcheck disable=SC2046 # the paths hold no spaces (mktemp under TMPDIR)
"$lbknn" run --quiet "${args[@]}" $(out "$PWD/one") || fail "one-shot run failed"

# A user's environment, not the gate's: PoCL (opened by the test gate) sets
# HWLOC_PLUGINS_PATH=/dev/null, which sbatch would pass on, and that hides
# from mpirun the fault jobs/long-run.sbatch works around (jobs/README.md,
# "Stopping a run": without the script's HWLOC_COMPONENTS=-opencl, mpirun
# swallows SIGUSR1).
unset HWLOC_PLUGINS_PATH
extra=(--time=5)
[ "$mode" = timelimit ] && extra=(--time=2 --signal=B:USR1@115)
[ "$mode" = nodes ] && extra+=(--nodes="$ntasks" --ntasks-per-node=1)
# shellcheck disable=SC2046
id=$(LBKNN="$lbknn" sbatch --parsable --ntasks="$ntasks" "${extra[@]}" \
    --output="$PWD/job.out" --chdir="$PWD" "$script" "${args[@]}" $(out "$PWD/batch") \
    --set "run.checkpoint=$PWD/batch/ck" --set run.checkpoint_s=1) || fail "sbatch failed"
echo "job $id ($mode)"
# field NAME: from the record read last (show_job), so that one poll's
# fields belong together.
show_job() { record=$(scontrol -o show job "$id" 2>/dev/null); }
field() { echo "$record" | grep -o " $1=[^ ]*" | cut -d= -f2; }

if [ "$mode" != timelimit ]; then
    # The first checkpoint exists only while the job runs (lbknn's handler
    # is in place by then): signal it at once, without polling SLURM.
    for _ in $(seq 2400); do [ -e batch/ck ] && break; sleep 0.05; done
    [ -e batch/ck ] || fail "no checkpoint appeared within 120 s"
    scancel --signal=USR1 --batch "$id" || fail "scancel --signal failed"
    echo "$(date -u +%T.%N): sent SIGUSR1 to the batch script"
fi
resized=
resize=(NumTasks=1 NumCPUs=1)
[ "$mode" = nodes ] && resize=(NumNodes=1 "${resize[@]}")
ran="" # "RESTARTS:NODELIST" of each start seen running
for _ in $(seq 400); do
    show_job
    state=$(field JobState)
    # Requeued (pending again, Restarts 1): one task (on one node) from now on.
    if { [ "$mode" = resize ] || [ "$mode" = nodes ]; } && [ -z "$resized" ] &&
        [ "$state" = PENDING ] && [ "$(field Restarts)" = 1 ]; then
        scontrol update JobId="$id" "${resize[@]}" || fail "scontrol update ${resize[*]} failed"
        resized=yes
        echo "$(date -u +%T.%N): requeued job given ${resize[*]}"
    fi
    if [ "$state" = RUNNING ]; then
        r="$(field Restarts):$(field NodeList)"
        case " $ran " in *" $r "*) ;; *) ran="$ran $r" ;; esac
    fi
    case $states in *" $state") ;; *) states="$states $state" ;; esac
    case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
    sleep 0.25
done
restarts=$(field Restarts)
echo "job $id: $state, Restarts=$restarts"
[ "$state" = COMPLETED ] || { scancel "$id" 2>/dev/null; fail "job ended $state"; }
[ "${restarts:-0}" -ge 1 ] || fail "the job was never requeued"
grep -q "start 1 on .* with ${LBK_LAUNCHER:-srun}," job.out ||
    fail "no restart with SLURM_RESTART_COUNT 1 (and ${LBK_LAUNCHER:-srun}) in the log"
grep -q "lbknn stopped with a checkpoint: requeueing" job.out || fail "no stop with exit 3"
grep -q "resuming with [0-9]* of $queries queries done" job.out ||
    fail "the restart did not resume from the checkpoint"
if [ "$mode" = resize ] || [ "$mode" = nodes ]; then
    [ -n "$resized" ] || fail "the requeued job was never seen pending"
    grep -q "resuming with [0-9]* of $queries queries done, on 1 rank " job.out ||
        fail "the restart did not resume on 1 rank"
fi
if [ "$mode" = nodes ]; then
    echo "ran on (restarts:nodes):$ran"
    on() { # RESTARTS NODES TASKS: SLURM and the script's log saw the start on NODES nodes
        local list n
        list=$(echo "$ran" | tr ' ' '\n' | sed -n "s/^$1://p" | head -n 1)
        [ -n "$list" ] || fail "start $1 never seen running"
        n=$(scontrol show hostnames "$list" | sort -u | wc -l)
        [ "$n" = "$2" ] || fail "start $1 ran on $list, not on $2 nodes"
        grep "start $1 on " job.out | grep -qF " $3 tasks on $2 nodes ($list)" ||
            fail "the log has no start $1 with $3 tasks on $2 nodes ($list)"
    }
    on 0 "$ntasks" "$ntasks"
    on 1 1 1
    # The stopped ranks' own hosts, as srun reports their exit 3.
    hosts=$(sed -n 's/^srun: error: \([^:]*\): task [0-9]*: Exited with exit code 3$/\1/p' job.out |
        sort -u | tr '\n' ' ')
    [ "$(echo "$hosts" | wc -w)" = "$ntasks" ] ||
        fail "the stopped ranks ran on '$hosts', not on $ntasks hosts"
    echo "stopped ranks ran on: $hosts"
fi
[ ! -e batch/ck ] && [ ! -e batch/ck.prev ] || fail "checkpoint left after the finished job"
ls batch/*.lbknn-partial 2>/dev/null && fail "partial files left"
for f in p.csv proba.csv n.ivecs d.fvecs; do
    [ -s "one/$f" ] || fail "the one-shot run wrote no $f"
    cmp "one/$f" "batch/$f" || fail "$f differs from the one-shot run"
done
"$verify" outputs data 5 l2 uniform batch/p.csv batch/n.ivecs batch/d.fvecs \
    "probabilities=batch/proba.csv" "report=batch/report.yaml" ||
    fail "the resumed outputs differ from the oracle"
echo "--- job.out ---"
cat job.out
echo "ok: stopped, requeued ($restarts), resumed, identical to one shot and the oracle"
