#!/usr/bin/python3
"""A SIFT-like uint8 set kept compact (issue 42): 1M x 128 uint8 points and
10k queries, K = 10, L2, written as .bvecs; lbknn end to end with
reference.type uint8 (the file's own type, exact integer keys by the dot
path; `auto` widens where the float32 prefilter applies, as here)
against reference.type float32 (the widened path, with its prefilter and
cascade) and FAISS IndexFlatL2 on the data widened to float32. For each:
end to end and search seconds, the report's peak device bytes and peak RSS
(VmHWM) and the reference shard's own bytes. Then every query's K ids of
the uint8 run against the float32 run's and FAISS's, and an exact oracle's
for the first --check queries (ids, ties by id, and distance bits: at
dimension 128 every sum of a float32 GEMM of these integers is below 2^24,
so NumPy's float32 arithmetic is exact here).

    /usr/bin/python3 bench/compact_sift.py LBKNN [--points N] [--queries M]
        [--seed S] [--check C] [--rounds R] [--dir D]

The data: --seed (printed) draws 1000 cluster centres, each with a sparse
nonnegative profile (gamma-distributed magnitudes, about a third of the
dimensions zero, as SIFT's gradient histograms are), and every point is a
centre plus Gaussian noise, rounded and clipped to 0..255. Runs the three
one after the other in one process tree, lbknn's two in R interleaved
rounds (the best of each kept), so the ratios are side by side under the
same load; prints one line each run, with its CPU seconds (user + system),
which a loaded machine disturbs less than wall time."""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from compact_fashion import oracle_check, read_vecs  # the exact integer oracle

DIM = 128


def make(n, seed, centres):
    rng = np.random.default_rng(seed)
    c = centres[rng.integers(0, len(centres), n)]
    x = c + rng.normal(0.0, 12.0, (n, DIM)).astype(np.float32)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def write_bvecs(path, x):
    rows = np.empty((len(x), 4 + DIM), dtype=np.uint8)
    rows[:, :4] = np.frombuffer(np.int32(DIM).tobytes(), dtype=np.uint8)
    rows[:, 4:] = x
    rows.tofile(path)


def report_fields(path):
    f = {}
    for line in open(path):
        s = line.strip()
        if s.startswith("search:"):
            f["search"] = float(s.split()[1])
        if "peak_rss_bytes" in s:
            for part in s.strip("-{} ").split(","):
                key, _, val = part.strip().partition(": ")
                if key in ("peak_rss_bytes", "peak_device_bytes"):
                    f[key] = int(val.strip("}"))
    return f


def lbknn(binary, ref, qry, tmp, type_, k):
    out = os.path.join(tmp, type_)
    cmd = [binary, "run", "--set", "reference.path=" + ref, "--set", "query.path=" + qry,
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
    widened = "widened" in p.stdout + p.stderr
    f = report_fields(out + ".yaml")
    f["cpu"] = cpu
    print("lbknn reference.type %-7s end to end %7.2f s  search %7.2f s  cpu %7.2f s  "
          "peak device %7.1f MiB  peak rss %7.1f MiB%s"
          % (type_, wall, f["search"], cpu, f["peak_device_bytes"] / 2**20,
             f["peak_rss_bytes"] / 2**20, "  (widened)" if widened else ""), flush=True)
    return wall, f, read_vecs(out + ".ivecs", "<i4"), read_vecs(out + ".fvecs", "<f4")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lbknn")
    ap.add_argument("--points", type=int, default=1000000)
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--check", type=int, default=500)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    centres = rng.gamma(0.6, 30.0, (1000, DIM)) * (rng.random((1000, DIM)) > 0.33)
    xb = make(args.points, args.seed + 1, centres)
    xq = make(args.queries, args.seed + 2, centres)
    print("# seed %d: %d x %d uint8 points, %d queries, K = %d; mean value %.1f, zeros %.0f %%"
          % (args.seed, args.points, DIM, args.queries, args.k, xb.mean(), 100.0 * (xb == 0).mean()),
          flush=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        ref, qry = os.path.join(tmp, "base.bvecs"), os.path.join(tmp, "query.bvecs")
        write_bvecs(ref, xb)
        write_bvecs(qry, xq)
        # Interleaved rounds (uint8, float32, ...): the best of each, so that
        # a burst of load on a shared machine does not decide the ratio.
        runs = {"uint8": [], "float32": []}
        for _ in range(args.rounds):
            for type_ in runs:
                runs[type_].append(lbknn(args.lbknn, ref, qry, tmp, type_, args.k))
    best = lambda rs, key: min(r[1][key] for r in rs)
    t_u8 = min(r[0] for r in runs["uint8"])
    t_f32 = min(r[0] for r in runs["float32"])
    f_u8 = {k: best(runs["uint8"], k) for k in runs["uint8"][0][1]}
    f_f32 = {k: best(runs["float32"], k) for k in runs["float32"][0][1]}
    ids, dist = runs["uint8"][0][2], runs["uint8"][0][3]
    ids32, dist32 = runs["float32"][0][2], runs["float32"][0][3]
    same = all(np.array_equal(r[2], ids) and np.array_equal(r[3].view("<u4"), dist.view("<u4"))
               for r in runs["uint8"] + runs["float32"])
    import faiss
    c0 = time.process_time()
    t0 = time.perf_counter()
    index = faiss.IndexFlatL2(DIM)
    index.add(xb.astype(np.float32))
    t1 = time.perf_counter()
    _, fids = index.search(xq.astype(np.float32), args.k)
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("faiss IndexFlatL2 (float32, %d threads) widen + add + search %7.2f s  search %7.2f s  "
          "cpu %7.2f s  python peak rss %7.1f MiB (with the generated set)"
          % (faiss.omp_get_max_threads(), t2 - t0, t2 - t1, cpu, rss))
    shard = lambda e: args.points * DIM * e / 2**20
    print("reference shard: uint8 %.1f MiB, float32 %.1f MiB (0.25x); peak device bytes %.2fx, "
          "peak rss %.2fx the float32 run's" % (shard(1), shard(4), f_u8["peak_device_bytes"] /
                                                  f_f32["peak_device_bytes"],
                                                  f_u8["peak_rss_bytes"] / f_f32["peak_rss_bytes"]))
    print("ratios: end to end uint8 / float32 path %.2fx, uint8 / faiss %.2fx, float32 / faiss %.2fx"
          % (t_u8 / t_f32, t_u8 / (t2 - t0), t_f32 / (t2 - t0)))
    print("ratios: search uint8 / float32 path %.2fx, uint8 / faiss %.2fx, float32 / faiss %.2fx"
          % (f_u8["search"] / f_f32["search"], f_u8["search"] / (t2 - t1),
             f_f32["search"] / (t2 - t1)))
    print("ratios: cpu seconds uint8 / float32 path %.2fx, uint8 / faiss %.2fx (best of %d rounds)"
          % (f_u8["cpu"] / f_f32["cpu"], f_u8["cpu"] / cpu, args.rounds))
    print("every lbknn run's lists identical to the first uint8 run's: %s" % same)
    c = min(args.check, args.queries)
    # float32 holds every 128-d uint8 squared distance and norm (< 2^24)
    bad = oracle_check(xb, xq[:c], ids, dist, args.k, dtype=np.float32, chunk=25)
    print("uint8 run vs the exact oracle: %d of the first %d queries differ (ids or distance bits)"
          % (bad, c))
    print("uint8 vs float32 runs: %d queries with other ids, %d with other distance bits" %
          (int((ids != ids32).any(axis=1).sum()),
           int((dist.view("<u4") != dist32.view("<u4")).any(axis=1).sum())))
    print("faiss vs uint8 run: %d queries with other ids" % int((fids != ids).any(axis=1).sum()))


if __name__ == "__main__":
    main()
