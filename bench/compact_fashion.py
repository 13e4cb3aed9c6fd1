#!/usr/bin/python3
"""Fashion-MNIST kept as uint8 (issue 42): lbknn end to end with
reference.type uint8 (exact integer keys: the dot path) against
reference.type float32 (the widened path, with its prefilter) and FAISS
IndexFlatL2 on the data widened to float32; and every query's K ids and
distances of the uint8 run against an exact oracle (float64 GEMM, exact for
these integers: every term and sum is an integer below 2^53), ties by id.

    /usr/bin/python3 bench/compact_fashion.py LBKNN [--dir D] [--queries N]
        [--rounds R]

Runs the three in one process tree, one after the other (lbknn's two in R
interleaved rounds, the best of each kept), so their ratios are side by
side under the same load; prints one line each run with its CPU seconds
(user + system), which a loaded machine disturbs less than wall time."""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from fashion_peers import read_idx  # the same IDX reader as the float32 peers


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype="<i4")
    k = raw[0]
    return raw.reshape(-1, k + 1)[:, 1:].copy().view(dtype)


def lbknn(binary, d, tmp, type_, queries, k):
    out = os.path.join(tmp, type_)
    cmd = [binary, "run", "--set", "reference.path=" + os.path.join(d, "train-images-idx3-ubyte.gz"),
           "--set", "query.path=" + os.path.join(d, "t10k-images-idx3-ubyte.gz"),
           "--set", "knn.engine=brute", "--set", "knn.k=%d" % k, "--set", "task=search",
           "--set", "reference.type=" + type_,
           "--set", "output.neighbors=" + out + ".ivecs", "--set", "output.distances=" + out + ".fvecs",
           "--set", "output.report=" + out + ".yaml"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        sys.exit(p.stdout + p.stderr)
    rank = [l for l in p.stdout.splitlines() if "rank 0 " in l and "points" in l]
    widened = "  (widened)" if "widened" in p.stdout + p.stderr else ""
    print("lbknn reference.type %-7s end to end %7.2f s  cpu %7.2f s  %s%s" %
          (type_, wall, cpu, rank[0].strip() if rank else "", widened), flush=True)
    return (wall, cpu, read_vecs(out + ".ivecs", "<i4")[:queries],
            read_vecs(out + ".fvecs", "<f4")[:queries])


def oracle_check(xb, xq, ids, dist, k, dtype=np.float64, chunk=500):
    """Ids by (exact squared distance, id), distances sqrtf(float32(exact)),
    for integer points: the GEMM form is exact in `dtype` while every
    squared distance and norm is below its 2^53 (float64) or 2^24 (float32,
    cheaper for large sets of small vectors)."""
    b = xb.astype(dtype)
    nb = np.einsum("ij,ij->i", b, b)
    bad = 0
    for lo in range(0, len(xq), chunk):
        q = xq[lo:lo + chunk].astype(dtype)
        d2 = (q * q).sum(axis=1)[:, None] + nb[None, :] - 2.0 * (q @ b.T)  # exact integers
        for i in range(len(q)):
            row = d2[i]
            kth = np.partition(row, k - 1)[k - 1]
            cand = np.nonzero(row <= kth)[0]
            order = cand[np.lexsort((cand, row[cand]))][:k]
            want = np.sqrt(row[order].astype(np.float32), dtype=np.float32)
            if not (np.array_equal(order, ids[lo + i]) and
                    np.array_equal(want.view("<u4"), dist[lo + i].view("<u4"))):
                bad += 1
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lbknn")
    ap.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    d = args.dir
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"uint8": [], "float32": []}
        for _ in range(args.rounds):
            for type_ in runs:
                runs[type_].append(lbknn(args.lbknn, d, tmp, type_, args.queries, args.k))
    t_u8, c_u8 = min(r[0] for r in runs["uint8"]), min(r[1] for r in runs["uint8"])
    t_f32, c_f32 = min(r[0] for r in runs["float32"]), min(r[1] for r in runs["float32"])
    ids, dist = runs["uint8"][0][2], runs["uint8"][0][3]
    ids32, dist32 = runs["float32"][0][2], runs["float32"][0][3]
    same = all(np.array_equal(r[2], ids) and np.array_equal(r[3].view("<u4"), dist.view("<u4"))
               for r in runs["uint8"])
    import faiss
    xb = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))
    xq = read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz"))[: args.queries]
    c0 = time.process_time()
    t0 = time.perf_counter()
    index = faiss.IndexFlatL2(xb.shape[1])
    index.add(xb.astype(np.float32))
    _, fids = index.search(xq.astype(np.float32), args.k)
    t_faiss = time.perf_counter() - t0
    c_faiss = time.process_time() - c0
    print("faiss IndexFlatL2 (float32, %d threads) widen + add + search %7.2f s  cpu %7.2f s" %
          (faiss.omp_get_max_threads(), t_faiss, c_faiss))
    print("ratios: uint8 / float32 path %.2fx, uint8 / faiss %.2fx, float32 path / faiss %.2fx" %
          (t_u8 / t_f32, t_u8 / t_faiss, t_f32 / t_faiss))
    print("ratios: cpu seconds uint8 / float32 path %.2fx, uint8 / faiss %.2fx (best of %d rounds)"
          % (c_u8 / c_f32, c_u8 / c_faiss, args.rounds))
    print("every uint8 run's lists identical to the first's: %s" % same)
    bad = oracle_check(xb, xq, ids, dist, args.k)
    print("uint8 run vs the exact oracle: %d of %d queries differ (ids or distance bits)" %
          (bad, len(xq)))
    print("uint8 vs float32 runs: %d queries with other ids, %d with other distance bits" %
          (int((ids != ids32).any(axis=1).sum()), int((dist.view('<u4') != dist32.view('<u4')).any(axis=1).sum())))
    print("faiss vs uint8 run: %d queries with other ids" % int((fids != ids).any(axis=1).sum()))


if __name__ == "__main__":
    main()
