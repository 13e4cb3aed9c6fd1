#!/usr/bin/python3
"""task: graph against SciPy cKDTree, side by side (bench/graph.sh runs it).

    graph_peers.py time LBKNN DIR ROUNDS      # DIR/{uniform,clustered}/reference.fvecs
    graph_peers.py memory LBKNN MPIEXEC DIR   # DIR/big/reference.fvecs, P = 1 and 2

time: per data set, ROUNDS interleaved rounds of (a) `lbknn run` with task
graph, K = 16, end to end as a user runs it (process start, reading the
points, device, build, search, writing the neighbours, distances and .npz
graph files) and (b) cKDTree(balanced_tree=True, leafsize=16) built on the
same float32 points and queried with query(X, k=17, workers=2), the first
column (each point itself) dropped: its build + query only (reading and
writing nothing). Medians; then the two graphs compared: rows whose ids are
equal, and for the others whether the distances agree (ties or float32
against float64 rounding swap ids).

memory: task graph on DIR/big at P = 1 and P = 2 (`mpirun --bind-to core`),
each rank's peak RSS above the process baseline (the same run on 1000 of
the points), the P = 2 maximum over the P = 1 figure.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml
from scipy.spatial import cKDTree

K = 16


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].view(np.float32).copy()


def run_lbknn(lbknn, points, out_dir, launcher=(), extra=()):
    out = {n: os.path.join(out_dir, n + e) for n, e in
           (("neighbors", ".npy"), ("distances", ".npy"), ("graph", ".npz"), ("report", ".yaml"))}
    cmd = list(launcher) + [lbknn, "run", "--quiet", "--set", "task=graph",
                            "--set", "reference.path=" + points, "--set", f"knn.k={K}",
                            "--set", "knn.engine=kdtree"]
    for name, path in out.items():
        cmd += ["--set", f"output.{name}={path}"]
    t0 = time.perf_counter()
    subprocess.run(cmd + list(extra), check=True)
    return time.perf_counter() - t0, out


def ckdtree_graph(x):
    t0 = time.perf_counter()
    tree = cKDTree(x, balanced_tree=True, leafsize=16)
    d, i = tree.query(x, k=K + 1, workers=2)
    return time.perf_counter() - t0, i[:, 1:], d[:, 1:]


def compare(ours_ids, ours_d, their_ids, their_d):
    same = (ours_ids == their_ids).all(axis=1)
    diff = ~same
    close = np.abs(ours_d[diff].astype(np.float64) - their_d[diff]) <= \
        2e-7 * np.maximum(their_d[diff], 1e-30) + 1e-12
    return same.mean(), int(diff.sum()), bool(close.all())


def time_cmd(lbknn, data_dir, rounds):
    print(f"| data | lbknn end to end s (median of {rounds}) | cKDTree build+query s | ratio "
          "| rows equal | other rows: distances agree |")
    print("|---|---|---|---|---|---|")
    for kind in ("uniform", "clustered"):
        points = os.path.join(data_dir, kind, "reference.fvecs")
        x = read_fvecs(points)
        ours, theirs = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(rounds):
                t, out = run_lbknn(lbknn, points, tmp)
                ours.append(t)
                t, ids, dist = ckdtree_graph(x)
                theirs.append(t)
            frac, ndiff, agree = compare(np.load(out["neighbors"]), np.load(out["distances"]),
                                         ids, dist)
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"| {kind} {len(x)} x 3, K = {K} | {a:.3f} ({min(ours):.3f}) | {b:.3f} "
              f"({min(theirs):.3f}) | {a / b:.2f}x | {frac:.6f} | {ndiff} rows: "
              f"{'yes' if agree else 'NO'} |")


def peaks(report):
    with open(report) as f:
        r = yaml.safe_load(f)
    return [s["peak_rss_bytes"] for s in r["rank_stats"]]


def memory_cmd(lbknn, mpiexec, data_dir):
    points = os.path.join(data_dir, "big", "reference.fvecs")
    small = os.path.join(data_dir, "small.npy")
    np.save(small, read_fvecs(points)[:1000])
    rows = []
    for p in (1, 2):
        launcher = (mpiexec, "-n", str(p), "--bind-to", "core")
        with tempfile.TemporaryDirectory() as tmp:
            _, out = run_lbknn(lbknn, small, tmp, launcher)
            base = max(peaks(out["report"]))
            t, out = run_lbknn(lbknn, points, tmp, launcher)
            rows.append((p, base, peaks(out["report"]), t))
    one = rows[0][2][0] - rows[0][1]
    print("| P | baseline MiB | peak RSS per rank MiB | above baseline MiB (max) | ratio to P = 1 "
          "| wall s |")
    print("|---|---|---|---|---|---|")
    for p, base, pk, t in rows:
        above = max(pk) - base
        print(f"| {p} | {base / 2**20:.1f} | {', '.join(f'{v / 2**20:.1f}' for v in pk)} | "
              f"{above / 2**20:.1f} | {above / one:.2f} | {t:.2f} |")


if __name__ == "__main__":
    if sys.argv[1] == "time":
        time_cmd(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        memory_cmd(sys.argv[2], sys.argv[3], sys.argv[4])
