#!/usr/bin/python3
"""Peer k-d trees for bench/results/kdtree.md: SciPy cKDTree (balanced_tree=True,
leafsize=16, queries with workers=2) and scikit-learn KDTree (leaf_size=16).

    /usr/bin/python3 bench/kdtree_peers.py build [N ...]     # default 1e5 1e6 1e7
    /usr/bin/python3 bench/kdtree_peers.py query [N NQ K]    # default 1e6 1e5 16

Data as in bench/kdtree_bench.c: float32, 3-D, uniform in [0,1)^3 or 64
Gaussian blobs (sigma 0.01) whose centres are shared by references and
queries. Prints Markdown tables; times are the median of 3 runs (1 at 1e7).
"""
import sys
import time

import numpy as np
from scipy.spatial import cKDTree
from sklearn.neighbors import KDTree

CENTRES = np.random.default_rng(777).random((64, 3))


def make(n, dist, seed):
    rng = np.random.default_rng(seed)
    if dist == "uniform":
        return rng.random((n, 3), dtype=np.float32)
    c = CENTRES[rng.integers(0, 64, n)]
    return (c + 0.01 * rng.standard_normal((n, 3))).astype(np.float32)


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def build(ns):
    print("| N | data | cKDTree build s | sklearn KDTree build s |")
    print("|---|---|---|---|")
    for n in ns:
        for dist in ("uniform", "clustered"):
            x = make(n, dist, 1)
            reps = 1 if n >= 5_000_000 else 3
            tc = median_time(lambda: cKDTree(x, leafsize=16, balanced_tree=True), reps)
            ts = median_time(lambda: KDTree(x, leaf_size=16), reps)
            print(f"| {n} | {dist} | {tc:.3f} | {ts:.3f} |", flush=True)


def query(n, nq, k):
    print("| N | queries | K | data | cKDTree query s (workers=2) | sklearn KDTree query s |")
    print("|---|---|---|---|---|---|")
    for dist in ("uniform", "clustered"):
        x = make(n, dist, 1)
        q = make(nq, dist, 2)
        tc_tree = cKDTree(x, leafsize=16, balanced_tree=True)
        sk_tree = KDTree(x, leaf_size=16)
        tc = median_time(lambda: tc_tree.query(q, k=k, workers=2), 3)
        ts = median_time(lambda: sk_tree.query(q, k=k), 3)
        print(f"| {n} | {nq} | {k} | {dist} | {tc:.3f} | {ts:.3f} |", flush=True)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("build", "query"):
        print(__doc__)
        return 2
    args = [int(float(a)) for a in sys.argv[2:]]
    if sys.argv[1] == "build":
        build(args or [100_000, 1_000_000, 10_000_000])
    else:
        n, nq, k = args if len(args) == 3 else (1_000_000, 100_000, 16)
        query(n, nq, k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
