#!/usr/bin/python3
"""Brute-force radius search with and without the prefilter's lower bounds
as filter (issue 40 item 4), against scikit-learn, rounds interleaved,
medians:

    /usr/bin/python3 bench/radius_brute.py [--build DIR] [--queries N] [--rounds N]
                                           [--mean M] [--dir FASHION_DIR]

Fashion-MNIST's 60000 training images (784-d float32, pixels / 255) as the
references, the first N test images as queries, one radius whose mean
count is M (bisection over each query's 4 M smallest float64 distances,
a count capped there). lbknn: `lbknn run job.yaml`, task radius, knn.engine
brute, one rank; its search is the report's (the sum of its search
phases). The engine has the prefilter (and so the filter) only for K <= 64
(brute_prefilter.c), so knn.k: 10 runs the filtered path and knn.k: 100
today's unfiltered one: the radius kernel and its answer are the same,
and the two graphs are compared byte for byte. Peers: scikit-learn
NearestNeighbors(algorithm='brute', n_jobs=2).radius_neighbors(q, r,
sort_results=True) and BallTree(leaf_size=40).query_radius(q, r,
return_distance=True, sort_results=True) (one thread), fitted untimed.
Prints a Markdown block; files under bench/out/radius_brute/.
"""
import argparse
import gzip
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import radius as rb  # noqa: E402  (sets OPENBLAS_CORETYPE before NumPy)
import numpy as np  # noqa: E402
from sklearn.neighbors import BallTree, NearestNeighbors  # noqa: E402


def idx_images(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    n, rows, cols = (int.from_bytes(raw[4 * i:4 * i + 4], "big") for i in (1, 2, 3))
    x = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols)
    return (x.astype(np.float32) / np.float32(255.0))


def radius_for(x, q, mean):
    """A float32 radius whose mean count over q is `mean`: bisection over
    each query's 4 * mean smallest float64 distances."""
    near = []
    x64 = x.astype(np.float64)
    xn = (x64 * x64).sum(1)
    keep = 4 * mean
    for i in range(0, len(q), 200):
        b = q[i:i + 200].astype(np.float64)
        d2 = (b * b).sum(1)[:, None] + xn[None, :] - 2.0 * b @ x64.T
        near.append(np.sort(np.partition(d2, keep, axis=1)[:, :keep], axis=1))
    near = np.sqrt(np.maximum(np.concatenate(near), 0))
    lo, hi = 0.0, float(near[:, -1].max())
    for _ in range(50):
        mid = (lo + hi) / 2
        c = (near <= mid).sum(1).mean()
        lo, hi = (mid, hi) if c < mean else (lo, mid)
    return float(np.float32(hi))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(rb.ROOT, "build"))
    ap.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mean", type=int, default=20)
    a = ap.parse_args()
    work = os.path.join(rb.ROOT, "bench", "out", "radius_brute")
    os.makedirs(work, exist_ok=True)
    x = idx_images(os.path.join(a.dir, "train-images-idx3-ubyte.gz"))
    q = idx_images(os.path.join(a.dir, "t10k-images-idx3-ubyte.gz"))[:a.queries]
    ref, qry = os.path.join(work, "reference.npy"), os.path.join(work, "query.npy")
    np.save(ref, x)
    np.save(qry, q)
    r = radius_for(x, q, a.mean)
    lb = rb.Lbknn(a.build, None)
    jobs = {}
    for name, k in (("filtered", 10), ("unfiltered", 100)):
        sub = os.path.join(work, name)
        out = {"graph": os.path.join(sub, "graph.npz"), "counts": os.path.join(sub, "counts.npy"),
               "report": os.path.join(sub, "report.yaml")}
        job = {"task": "radius", "reference": {"path": ref}, "query": {"path": qry},
               "knn": {"radius": r, "engine": "brute", "k": k}, "output": out}
        jobs[name] = (rb.write_job(sub, job), out)
    nn = NearestNeighbors(algorithm="brute", n_jobs=2).fit(x)
    ball = BallTree(x, leaf_size=40)
    times = {k: [] for k in ("filtered", "unfiltered", "sklearn brute", "BallTree")}
    for _ in range(a.rounds):
        for name, (path, _) in jobs.items():
            times[name].append(rb.lbknn_times(lb, path, None)[0])
        t0 = time.perf_counter()
        nn.radius_neighbors(q, r, sort_results=True)
        times["sklearn brute"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ball.query_radius(q, r, return_distance=True, sort_results=True)
        times["BallTree"].append(time.perf_counter() - t0)
    same = open(jobs["filtered"][1]["graph"], "rb").read() == \
        open(jobs["unfiltered"][1]["graph"], "rb").read()
    counts = np.load(jobs["filtered"][1]["counts"])
    peer = ball.query_radius(q, r, count_only=True)
    print(f"Fashion-MNIST 60000 x 784 float32, {len(q)} queries, l2, r = {r!r}: "
          f"mean count {counts.mean():.1f} (BallTree, float64: {peer.mean():.1f}; "
          f"queries whose count differs: {int((counts != peer).sum())}); "
          f"filtered graph byte-identical to unfiltered: {same}; load {rb.load()}")
    print()
    print("| search, medians s | " + " | ".join(times) + " |")
    print("|---|" + "---|" * len(times))
    print("| | " + " | ".join(f"{statistics.median(v):.3f}" for v in times.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
