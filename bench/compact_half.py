#!/usr/bin/python3
"""float16 embeddings kept as float16 (issue 42): lbknn with reference.type
auto (the .npy's float16, kept compact; cosine normalised on the fly)
against reference.type float32 (the same file widened on read, the float32
path), side by side, interleaved; cosine, brute force.

Data: a deterministic synthetic set of N x D float16 embeddings (.npy <f2),
a Gaussian mixture (64 centres, per-dimension scales), and NQ float32
queries from the same mixture; the seed is printed. Per run: end to end,
the report's search time, peak RSS (VmHWM) and peak device bytes, and the
reference points' own bytes (N x D at the type's width). Checks: the
float16 run's neighbours and distances files equal the float32 run's,
byte for byte, and its ids equal a NumPy float64 oracle's (true cosine on
the float16 values) except near ties (the float64 distances of the two
K-lists agree within 4e-6 position by position: float32 rounding).

    /usr/bin/python3 bench/compact_half.py LBKNN [--n 500000] [--dim 768]
        [--queries 1000] [--k 20] [--repeats 2] [--dir D] [--seed 42]"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from compact_fashion import read_vecs


def make_data(d, n, dim, nq, seed):
    ref_path, q_path = os.path.join(d, "ref_f16.npy"), os.path.join(d, "q_f32.npy")
    if os.path.exists(ref_path) and os.path.exists(q_path):
        return ref_path, q_path
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((64, dim)).astype(np.float32)
    scale = (0.3 + rng.random(dim)).astype(np.float32)
    out = np.lib.format.open_memmap(ref_path + ".tmp", mode="w+", dtype="<f2", shape=(n, dim))
    for lo in range(0, n, 50000):
        m = min(50000, n - lo)
        c = centres[rng.integers(0, 64, m)]
        out[lo:lo + m] = (c + 0.6 * rng.standard_normal((m, dim), dtype=np.float32) * scale
                          ).astype(np.float16)
    out.flush()
    del out
    os.replace(ref_path + ".tmp", ref_path)
    c = centres[rng.integers(0, 64, nq)]
    q = (c + 0.6 * rng.standard_normal((nq, dim), dtype=np.float32) * scale).astype(np.float32)
    np.save(q_path, q)
    return ref_path, q_path


def lbknn(binary, ref, q, tmp, type_, k, tag, metric="cosine"):
    out = os.path.join(tmp, tag)
    cmd = [binary, "run", "--set", "reference.path=" + ref, "--set", "query.path=" + q,
           "--set", "knn.engine=brute", "--set", "knn.k=%d" % k, "--set", "task=search",
           "--set", "knn.metric=" + metric, "--set", "reference.type=" + type_,
           "--set", "output.neighbors=" + out + ".ivecs",
           "--set", "output.distances=" + out + ".fvecs", "--set", "output.report=" + out + ".yaml"]
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    if p.returncode != 0:
        sys.exit(p.stdout + p.stderr)
    rep = open(out + ".yaml").read()
    search = float(re.search(r"^  search: ([0-9.]+)", rep, re.M).group(1))
    rss = int(re.search(r"peak_rss_bytes: (\d+)", rep).group(1))
    dev = int(re.search(r"peak_device_bytes: (\d+)", rep).group(1))
    widened = "widened" in p.stderr
    brute = re.search(r"brute: \{[^}]*\}", p.stdout)
    return {"wall": wall, "cpu": cpu, "search": search, "rss": rss, "dev": dev, "widened": widened,
            "paths": brute.group(0) if brute else "", "out": out}


def oracle_check(ref_path, q_path, ids, k):
    """Ids by float64 cosine distance on the float16 values; near ties
    (the two K-lists' float64 distances within 4e-6 at every position) are
    counted apart."""
    q = np.load(q_path).astype(np.float64)
    q /= np.maximum(np.linalg.norm(q, axis=1), 1e-300)[:, None]
    x = np.load(ref_path, mmap_mode="r")
    best_d = np.full((len(q), k), np.inf)
    best_i = np.zeros((len(q), k), dtype=np.int64)
    got_d = np.zeros((len(q), k))
    for lo in range(0, len(x), 50000):
        b = np.asarray(x[lo:lo + 50000], dtype=np.float64)
        b /= np.maximum(np.linalg.norm(b, axis=1), 1e-300)[:, None]
        dist = 1.0 - q @ b.T
        rows = np.arange(lo, lo + len(b))
        inside = (ids >= lo) & (ids < lo + len(b))
        qi, si = np.nonzero(inside)
        got_d[qi, si] = dist[qi, ids[qi, si] - lo]
        alld = np.concatenate([best_d, dist], axis=1)
        alli = np.concatenate([best_i, np.broadcast_to(rows, dist.shape)], axis=1)
        order = np.lexsort((alli, alld), axis=1)[:, :k]
        best_d = np.take_along_axis(alld, order, axis=1)
        best_i = np.take_along_axis(alli, order, axis=1)
    equal = (np.sort(ids, axis=1) == np.sort(best_i, axis=1)).all(axis=1)
    near = ~equal & (np.abs(np.sort(got_d, axis=1) - best_d).max(axis=1) <= 4e-6)
    return int(equal.sum()), int(near.sum()), int((~equal & ~near).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lbknn")
    ap.add_argument("--n", type=int, default=500000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dir", default="")
    ap.add_argument("--metric", default="cosine",
                    help="cosine (the target), or l2 / ip: then no oracle check")
    ap.add_argument("--type16", default="auto",
                    help="reference.type of the float16 runs (auto, or float16 to keep them "
                    "compact where auto widens)")
    a = ap.parse_args()
    print("seed %d: %d x %d float16 (.npy <f2), %d float32 queries, %s, K = %d"
          % (a.seed, a.n, a.dim, a.queries, a.metric, a.k))
    with tempfile.TemporaryDirectory() as tmp:
        d = a.dir or tmp
        os.makedirs(d, exist_ok=True)
        t0 = time.perf_counter()
        ref, q = make_data(d, a.n, a.dim, a.queries, a.seed)
        print("data ready in %.1f s" % (time.perf_counter() - t0))
        # Warm-up on the first rows (the kernels compile once per shape of
        # options, not per data size): no run below pays a compile.
        small = os.path.join(tmp, "warm.npy")
        np.save(small, np.load(ref, mmap_mode="r")[:4096])
        for type_ in ("auto", "float32"):
            lbknn(a.lbknn, small, q, tmp, type_, a.k, "warm_" + type_, a.metric)
        runs = {"auto": [], "float32": []}
        for r in range(a.repeats):
            for type_ in ("auto", "float32"):  # interleaved: the same load for both
                asked = a.type16 if type_ == "auto" else type_
                res = lbknn(a.lbknn, ref, q, tmp, asked, a.k, "%s_%d" % (type_, r), a.metric)
                runs[type_].append(res)
                print("  %-7s #%d  end to end %7.2f s  cpu %7.2f s  search %7.2f s  peak rss "
                      "%7.1f MiB  peak device %7.1f MiB%s  %s"
                      % (type_, r, res["wall"], res["cpu"], res["search"], res["rss"] / 2**20,
                         res["dev"] / 2**20, "  (WIDENED)" if res["widened"] else "",
                         res["paths"]))
        h, f = runs["auto"], runs["float32"]
        same = all(open(x["out"] + e, "rb").read() == open(f[0]["out"] + e, "rb").read()
                   for x in h for e in (".ivecs", ".fvecs"))
        ids = read_vecs(h[0]["out"] + ".ivecs", "<i4").astype(np.int64)
        eq, near, bad = oracle_check(ref, q, ids, a.k) if a.metric == "cosine" else (0, 0, 0)
        med = lambda rs, key: sorted(x[key] for x in rs)[len(rs) // 2]
        mn = lambda rs, key: min(x[key] for x in rs)
        print("float16 / float32: search %.3f (min %.2f / %.2f s), end to end %.3f (min %.2f / "
              "%.2f s), cpu %.3f (min %.2f / %.2f s), peak rss %.3f, peak device %.3f; "
              "reference bytes %d / %d = %.2f"
              % (mn(h, "search") / mn(f, "search"), mn(h, "search"), mn(f, "search"),
                 mn(h, "wall") / mn(f, "wall"), mn(h, "wall"), mn(f, "wall"),
                 mn(h, "cpu") / mn(f, "cpu"), mn(h, "cpu"), mn(f, "cpu"),
                 med(h, "rss") / med(f, "rss"), med(h, "dev") / med(f, "dev"),
                 a.n * a.dim * 2, a.n * a.dim * 4, 0.5))
        print("float16 outputs == float32 outputs (bytes): %s" % ("yes" if same else "NO"))
        print("oracle (float64): %d queries equal, %d near ties, %d differ" % (eq, near, bad))
        if not same or bad:
            sys.exit(1)


if __name__ == "__main__":
    main()
