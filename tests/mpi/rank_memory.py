#!/usr/bin/python3
"""Per-rank peak memory against P at a fixed total N (issue 25, item 3): the
report's rank_stats peak_rss_bytes of every rank at P = 2, 8 and 16, for the
spatial partition and for row shards, within the bound of the memory model
of docs/design.md section 9 ("Memory per rank against P"):

    peak(r) <= baseline + C_POINT * ceil(N / P) + C_RANK * P
               + C_PEER * (P - 1) + C_FIXED

baseline is the process with no data: a one-rank run of the same job on 64
points, measured here (MPI, the OpenCL runtime and its kernels; it is the
only measured term). The other constants are the model's, not fits to this
code's figures; see the design record for where each comes from. A term
that grew with P beyond C_RANK and C_PEER (a rank holding N rather than
N / P points, a P x P table, a buffer per peer per batch) breaks the bound
at P = 16 long before the margins matter.

usage: rank_memory.py LBKNN MPIEXEC [POINTS]
"""
import math
import os
import re
import subprocess
import sys
import tempfile

LBKNN, MPIEXEC = os.path.abspath(sys.argv[1]), sys.argv[2]
POINTS = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
QUERIES, DIM, K, SEED = 2000, 3, 16, 7
MIB = 1 << 20

# The model's constants (docs/design.md section 9), for D = 3.
C_POINT = 256  # bytes per point a rank holds at its peak (components sum to ~130)
C_RANK = 1024  # bytes per rank of the replicated tables (top tree, rank_stats, ...)
C_PEER = 1 * MIB  # Open MPI's shared-memory state per peer (fast box, fragments)
C_FIXED = 48 * MIB  # a PoCL compile, huge-page rounding, batch buffers, histograms

RANKS = (2, 8, 16)
PARTITIONS = (("spatial", ["--set", "mpi.partition=spatial"]),
              ("shard", ["--set", "mpi.partition=shard", "--set", "mpi.merge=reduce_scatter"]))
failures = []


def peaks(report):
    """Every rank's (rank, points, peak_rss_bytes), in rank order."""
    with open(report) as f:
        text = f.read()
    rows = re.findall(r"^  - \{rank: (\d+), points: (\d+),.*peak_rss_bytes: (\d+)", text, re.M)
    return [tuple(int(v) for v in row) for row in rows]


def run(work, ranks, data, extra):
    report = os.path.join(work, "report.yaml")
    cmd = [MPIEXEC, "-n", str(ranks), LBKNN, "run", "--quiet", os.path.join(data, "job.yaml"),
           "--set", f"knn.k={K}", "--set", "knn.engine=kdtree", "--set", "output.predictions=",
           "--set", f"output.report={report}"] + extra
    subprocess.run(cmd, check=True, cwd=work)
    rows = peaks(report)
    if len(rows) != ranks:
        failures.append(f"{ranks} ranks: the report has {len(rows)} rank_stats lines")
    return rows


def generate(work, name, points):
    data = os.path.join(work, name)
    subprocess.run([LBKNN, "generate", data, "--points", str(points), "--queries", str(QUERIES),
                    "--dim", str(DIM), "--seed", str(SEED)], check=True,
                   stdout=subprocess.DEVNULL)
    return data


def main():
    print(f"N = {POINTS}, {QUERIES} queries, D = {DIM}, K = {K}, seed {SEED}")
    with tempfile.TemporaryDirectory(prefix="lbk-memory.") as work:
        tiny, full = generate(work, "tiny", 64), generate(work, "full", POINTS)
        baseline = run(work, 1, tiny, [])[0][2]
        print(f"baseline (one rank, 64 points): {baseline / MIB:.1f} MiB")
        print("partition  P  share  bound MiB  peak MiB: min  max")
        for name, extra in PARTITIONS:
            for p in RANKS:
                rows = run(work, p, full, extra)
                share = math.ceil(POINTS / p)
                bound = baseline + C_POINT * share + C_RANK * p + C_PEER * (p - 1) + C_FIXED
                top = max(r[2] for r in rows)
                print(f"{name:9} {p:2} {share:7} {bound / MIB:9.1f}  "
                      f"{min(r[2] for r in rows) / MIB:9.1f} {top / MIB:5.1f}")
                for rank, points, peak in rows:
                    # Under the spatial partition a rank owns its box's points,
                    # each its proportional share to within a point per level.
                    if points > share + math.ceil(math.log2(p)):
                        failures.append(f"{name} P={p} rank {rank}: {points} points > {share}")
                    if peak > bound:
                        failures.append(f"{name} P={p} rank {rank}: peak {peak / MIB:.1f} MiB > "
                                        f"bound {bound / MIB:.1f} MiB")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
