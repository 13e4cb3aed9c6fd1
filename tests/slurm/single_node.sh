#!/bin/bash
# jobs/single-node.sbatch through the private cluster: the batch job's output
# files must be byte-identical to a plain one-rank run of the same job.
# Runs inside slurm_harness.sh (LBK_SLURM_DIR, SLURM_CONF set).
# usage: single_node.sh LBKNN SBATCH_SCRIPT NTASKS [lbknn run arguments...]
set -u
lbknn=$1 script=$2 ntasks=$3
shift 3
cd "$LBK_SLURM_DIR" || exit 1
mkdir one batch

out() {
    echo --set "output.predictions=$1/predictions.csv" --set "output.neighbors=$1/neighbors.ivecs" \
        --set "output.distances=$1/distances.fvecs" --set "output.report=$1/report.yaml"
}
# shellcheck disable=SC2046 # the paths hold no spaces (mktemp under TMPDIR)
"$lbknn" run --quiet "$@" $(out "$PWD/one") || { echo "one-rank run failed"; exit 1; }

# The machine may have fewer cores than the script asks tasks for; the
# command line overrides #SBATCH lines. LBKNN: the binary under test.
# A job that never finishes (seen once in many runs: the private cluster, not
# lbknn, stalled) is cancelled after 120 s, the cluster's state is printed,
# and the job is submitted once more; the comparison below is the same for
# either attempt.
for attempt in 1 2; do
    rm -rf batch && mkdir batch
    # shellcheck disable=SC2046
    LBKNN="$lbknn" timeout 120 sbatch --wait --time=2 --ntasks="$ntasks" \
        --output="$PWD/job.out" --chdir="$PWD" "$script" --quiet "$@" $(out "$PWD/batch")
    rc=$?
    [ "$rc" -ne 124 ] && break
    echo "WARNING: attempt $attempt: the batch job did not finish within 120 s" >&2
    squeue -a >&2
    scontrol show job >&2
    tail -n 20 "$LBK_SLURM_DIR"/../log/slurmctld.log "$LBK_SLURM_DIR"/../log/slurmd.log >&2
    scancel --state=PENDING,RUNNING -u "$(id -un)" >/dev/null 2>&1
done
cat job.out
[ "$rc" -eq 0 ] || { echo "batch job failed (sbatch rc $rc)"; exit 1; }

status=0
for f in predictions.csv neighbors.ivecs distances.fvecs; do
    if [ ! -s "one/$f" ]; then echo "one-rank run wrote no $f"; status=1
    elif ! cmp "one/$f" "batch/$f"; then echo "$f differs"; status=1; fi
done
grep -q "^ranks: $ntasks\$" batch/report.yaml || { echo "report does not say ranks: $ntasks"; status=1; }
# The partition the arguments asked for is the one that ran.
for want in shard spatial; do
    case " $* " in
    *" mpi.partition=$want "*)
        grep -q "^partition: {name: $want," batch/report.yaml ||
            { echo "report does not say partition $want"; status=1; }
        echo "partition: $want" ;;
    esac
done
[ "$status" -eq 0 ] && echo "ok: $ntasks SLURM tasks match one rank"
exit "$status"
