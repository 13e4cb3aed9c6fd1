#!/usr/bin/python3
"""Peers on the PBKNN benchmark data: scikit-learn brute force and FAISS
IndexFlatL2, K = 16, on the .fvecs files written by `pbknn_select --write DIR`.

    bash -c ". bench/peers.sh && /usr/bin/python3 bench/pbknn_peers.py DIR [--m 1,8,64] [--reps 5]"
(bench/peers.sh installs the peers and picks OPENBLAS_CORETYPE from the CPU flags.)

Prints the best-of-reps query time per library and m, and how many of the
K-neighbour index lists agree with each other (exact float ties aside, they
should all agree)."""
import argparse
import os
import time

import numpy as np


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    dim = raw[0]
    return raw.reshape(-1, dim + 1)[:, 1:].view(np.float32).copy()


def best_time(fn, reps):
    best, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--m", default="1,8,64")
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import faiss
    from sklearn.neighbors import NearestNeighbors

    q = read_fvecs(os.path.join(args.dir, "query.fvecs"))
    print(f"# {q.shape[0]} queries, dim {q.shape[1]}, K = {args.k}, best of {args.reps}, "
          f"faiss threads {faiss.omp_get_max_threads()}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}")
    print(f"{'m':>4} {'refs':>8} {'sklearn_ms':>11} {'faiss_ms':>9} {'same_lists':>10}")
    for m in [int(x) for x in args.m.split(",")]:
        base = read_fvecs(os.path.join(args.dir, f"base_m{m}.fvecs"))
        nn = NearestNeighbors(n_neighbors=args.k, algorithm="brute").fit(base)
        t_sk, (_, i_sk) = best_time(lambda: nn.kneighbors(q), args.reps)
        index = faiss.IndexFlatL2(base.shape[1])
        index.add(base)
        t_fa, (_, i_fa) = best_time(lambda: index.search(q, args.k), args.reps)
        same = int(np.sum(np.all(i_sk == i_fa, axis=1)))
        print(f"{m:>4} {base.shape[0]:>8} {t_sk * 1e3:>11.2f} {t_fa * 1e3:>9.2f} "
              f"{same:>6}/{q.shape[0]}")


if __name__ == "__main__":
    main()
