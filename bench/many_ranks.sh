#!/bin/bash
# Many ranks on one job (issue 25, item 3): start-up, wall time and every
# rank's peak memory for P = 1, 2, 4, 8, 16, 32 at a fixed total N. One
# machine, oversubscribed beyond its cores (one PoCL thread a rank where
# ranks outnumber cores: src/comm/cpu_share.c), so the seconds show what
# start-up costs per rank, not a speed-up; the memory figures are the point
# (the model: docs/design.md section 9, "Memory per rank against P").
#
#   bench/many_ranks.sh [--quick] [--ranks "1 2 4 8 16 32"] [--partition spatial|shard|replicate]
#                       [--out DIR] [--set key=value ...]
#
# Default: `lbknn generate` data, 1e6 3-D references, 1e4 queries, K = 16,
# k-d tree, mpi.partition: spatial; --quick: 1e5 and 1e3. P = 1 runs under
# mpirun too. Per P: wall = mpirun's whole run; launch = wall - the
# report's total (mpirun's spawn, MPI_Init, MPI_Finalize, exit); to first
# batch = the slowest rank's read + device + build + distribute (lbk_run's
# start, just after MPI_Init, to its first batch); query = the slowest
# rank's; peak RSS = the report's rank_stats peak_rss_bytes, smallest and
# largest rank. Reports in DIR (default bench/out/many_ranks/), the table on
# stdout and in DIR/table.md. LBKNN picks the binary (default build/lbknn).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pts=1000000 qs=10000 ranks="1 2 4 8 16 32" partition=spatial out=$root/bench/out/many_ranks
extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --quick) pts=100000 qs=1000 ;;
    --ranks) ranks=$2; shift ;;
    --partition) partition=$2; shift ;;
    --out) out=$2; shift ;;
    --set) extra+=(--set "$2"); shift ;;
    *) echo "usage: $0 [--quick] [--ranks \"1 2 4 8 16 32\"] [--partition P] [--out DIR] [--set key=value ...]" >&2
       exit 2 ;;
    esac
    shift
done
. "$root/bench/counts_setup.sh"
mkdir -p "$out"
rm -f "$out"/p*.yaml "$out"/wall.txt
"$LBKNN" generate "$out/data" --points "$pts" --queries "$qs" --dim 3 >/dev/null
# One run first, not recorded: PoCL's kernel cache filled, the files read
# once. Then the process without data (64 points): the memory baseline.
mpirun -n 1 "$LBKNN" run --quiet "$out/data/job.yaml" --set output.predictions= \
    --set knn.k=16 --set knn.engine=kdtree >/dev/null
"$LBKNN" generate "$out/tiny" --points 64 --queries "$qs" --dim 3 >/dev/null
mpirun -n 1 "$LBKNN" run --quiet "$out/tiny/job.yaml" --set output.predictions= \
    --set knn.k=16 --set knn.engine=kdtree --set "output.report=$out/baseline.yaml"
for np in $ranks; do
    report=$out/p$np.yaml
    t0=$(date +%s.%N)
    mpirun -n "$np" "$LBKNN" run --quiet "$out/data/job.yaml" --set knn.k=16 \
        --set knn.engine=kdtree --set "mpi.partition=$partition" --set output.predictions= \
        ${extra[@]+"${extra[@]}"} --set "output.report=$report"
    t1=$(date +%s.%N)
    echo "$np $t0 $t1" >>"$out/wall.txt"
    echo "done: P = $np" >&2
done
/usr/bin/python3 - "$out" "$pts" "$qs" "$partition" <<'EOF' | tee "$out/table.md"
import re, sys
out, pts, qs, partition = sys.argv[1:5]
MIB = 1 << 20
base = int(re.search(r"peak_rss_bytes: (\d+)", open(f"{out}/baseline.yaml").read()).group(1))
print(f"N = {pts}, {qs} queries, D = 3, K = 16, k-d tree, mpi.partition: {partition}; "
      f"baseline (one rank, 64 points) {base / MIB:.1f} MiB\n")
print("| P | points a rank | wall s | launch s | to first batch s | query s | "
      "peak RSS MiB, min | max | max - baseline |")
print("|---|---|---|---|---|---|---|---|---|")
for line in open(f"{out}/wall.txt"):
    np, t0, t1 = line.split()
    text = open(f"{out}/p{np}.yaml").read()
    total = float(re.search(r"^  total: ([\d.]+)", text, re.M).group(1))
    phases = [dict(re.findall(r"(\w+): ([\d.]+)", m)) for m in
              re.findall(r"^  - (\{rank: \d+, read: .*\})$", text, re.M)]
    if not phases:  # one rank: the timings_s block's own numbers
        phases = [{p: re.search(rf"^  {p}: {{min: ([\d.]+)", text, re.M).group(1)
                   for p in ("read", "device", "build", "distribute", "query")}]
    start = max(sum(float(r[p]) for p in ("read", "device", "build", "distribute"))
                for r in phases)
    query = max(float(r["query"]) for r in phases)
    rss = [int(v) for v in re.findall(r"peak_rss_bytes: (\d+)", text)]
    wall = float(t1) - float(t0)
    print(f"| {np} | {int(pts) // int(np)} | {wall:.2f} | {wall - total:.2f} | {start:.3f} | "
          f"{query:.3f} | {min(rss) / MIB:.1f} | {max(rss) / MIB:.1f} | "
          f"{(max(rss) - base) / MIB:.1f} |")
EOF
