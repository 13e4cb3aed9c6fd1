#!/bin/bash
# Harness smoke test: a two-task batch job runs to completion and every task
# prints the node's name.
set -u
cd "$LBK_SLURM_DIR" || exit 1
cat >job.sh <<'JOB'
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --output=job.out
srun hostname
JOB
# As in single_node.sh: a stalled job is cancelled and submitted once more.
for attempt in 1 2; do
    timeout 90 sbatch --wait --time=2 --chdir="$LBK_SLURM_DIR" job.sh
    rc=$?
    [ "$rc" -ne 124 ] && break
    echo "WARNING: attempt $attempt: the batch job did not finish within 90 s" >&2
    squeue -a >&2
    scancel --state=PENDING,RUNNING -u "$(id -un)" >/dev/null 2>&1
done
[ "$rc" -eq 0 ] || { cat job.out 2>/dev/null; exit 1; }
want=$(hostname)
n=$(grep -cx "$want" job.out)
[ "$n" -eq 2 ] || { echo "want 2 lines '$want', got:"; cat job.out; exit 1; }
echo ok
