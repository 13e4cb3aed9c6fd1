#!/usr/bin/python3
"""mpi.balance: queries on skewed queries (issue 25 item 5): clustered
references (64 blobs) with every query from 4 of the blobs, the skewed
case of bench/work_scaling.sh at its --quick size (bench_points' rows). The spatial
partition's boxes balanced by the queries give the neighbours and distances
of one rank byte for byte, and the report's work counters (deterministic)
show the busiest rank's distance evaluations within 1.25 x the mean, where
the boxes balanced by points alone leave it far above (so the check can
tell the two apart).

usage: balance_skewed.py LBKNN MPIEXEC RANKS
"""
import array
import math
import os
import re
import struct
import subprocess
import sys
import tempfile


LBKNN, MPIEXEC, RANKS = os.path.abspath(sys.argv[1]), sys.argv[2], int(sys.argv[3])
N, NQ, BLOBS, HOT, K = 100000, 10000, 64, 4, 16
failures = []
MASK = (1 << 64) - 1


def mix(x):
    """splitmix64's finaliser, as bench/bench_points.c's (wrapping uint64)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def unit(h):
    return ((h >> 40) + 1) / float(1 << 24)


def blobs(stream, rows, blob_count):
    """bench_points' clustered rows (64 blobs of sigma 0.01, centres uniform
    in [0, 1)^3), each from one of the first blob_count blobs; computed in
    double here (plain Python: the GPU bundle's machine need not have
    numpy), so the last bit may differ from the bench's floats."""
    out = array.array("f")
    s = mix(stream)
    for row in range(rows):
        key = mix(s ^ row)
        blob = mix(key) % blob_count
        out.append(3.0)  # the fvecs row's dimension, as bits below
        for j in range(3):
            h = mix((key + (j + 1) * 0x9E3779B97F4A7C15) & MASK)
            centre = unit(mix(0xC3A5C85C97CB3127 ^ (blob * 64 + j)))
            out.append(centre + 0.01 * math.sqrt(-2.0 * math.log(unit(h))) *
                       math.cos(6.2831853 * unit(mix(h))))
    raw = bytearray(out.tobytes())
    for r in range(rows):  # each row starts with the int32 3, not the float
        struct.pack_into("<i", raw, 16 * r, 3)
    return bytes(raw)


def make_data(d):
    with open(os.path.join(d, "ref.fvecs"), "wb") as f:
        f.write(blobs(1, N, BLOBS))
    with open(os.path.join(d, "qry.fvecs"), "wb") as f:
        f.write(blobs(2, NQ, HOT))


def imbalance(report):
    with open(report) as f:
        text = f.read()
    m = re.search(r"^  distance_evals: \{total: (\d+), max: (\d+), imbalance: ([\d.]+)", text,
                  re.M)
    if not m:
        failures.append(f"{report}: no work: distance_evals line")
        return 0.0, 0
    return float(m.group(3)), int(m.group(1))


def run(d, name, ranks, extra):
    out = os.path.join(d, name)
    cmd = [MPIEXEC, "-n", str(ranks), LBKNN, "run", "--quiet",
           "--set", "task=search", "--set", "reference.path=ref.fvecs",
           "--set", "query.path=qry.fvecs", "--set", f"knn.k={K}",
           "--set", "knn.engine=kdtree", "--set", "mpi.partition=spatial",
           "--set", f"output.neighbors={out}.ivecs", "--set", f"output.distances={out}.fvecs",
           "--set", "output.predictions=", "--set", f"output.report={out}.yaml"] + extra
    subprocess.run(cmd, check=True, cwd=d)
    with open(out + ".ivecs", "rb") as a, open(out + ".fvecs", "rb") as b:
        return a.read(), b.read(), imbalance(out + ".yaml")


def main():
    print(f"bench_points' streams 1 and 2: {N} references in {BLOBS} blobs, {NQ} queries "
          f"from {HOT} of them, K = {K}, P = {RANKS}")
    with tempfile.TemporaryDirectory(prefix="lbk-balance.") as d:
        make_data(d)
        one = run(d, "p1", 1, [])
        plain = run(d, "points", RANKS, [])
        balanced = run(d, "queries", RANKS,
                       ["--set", "mpi.balance=queries", "--set", "tree.split=widest"])
        for name, r in (("balance points", plain), ("balance queries", balanced)):
            if r[0] != one[0] or r[1] != one[1]:
                failures.append(f"{name}: neighbours or distances differ from one rank's")
        (bi, bt), (pi, pt) = balanced[2], plain[2]
        print(f"imbalance of distance evaluations: points {pi:.3f} (total {pt}), "
              f"queries {bi:.3f} (total {bt})")
        if not bi <= 1.25:
            failures.append(f"balanced imbalance {bi:.3f} > 1.25")
        if not pi > 1.25:
            failures.append(f"unbalanced imbalance {pi:.3f} <= 1.25: the case shows nothing")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("ok: byte-identical to one rank, balanced within 1.25")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
