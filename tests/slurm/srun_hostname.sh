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
sbatch --wait --chdir="$LBK_SLURM_DIR" job.sh || { cat job.out 2>/dev/null; exit 1; }
want=$(hostname)
n=$(grep -cx "$want" job.out)
[ "$n" -eq 2 ] || { echo "want 2 lines '$want', got:"; cat job.out; exit 1; }
echo ok
