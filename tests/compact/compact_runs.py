#!/usr/bin/python3
"""Compact reference points through whole runs, against an exact integer oracle.

    compact_runs.py LBKNN MPIEXEC PLAN

Writes a uint8 set (.u8bin) and an int8 set (.i8bin) whose values cluster
near the type's ends, with repeated rows, so that exact ties by id abound;
queries of the same type, some equal to reference rows. For each
(type, metric, ranks, batch) of PLAN ("default": every metric on 1 rank at
two batch sizes, and on 2 and 3 ranks for two metrics each; "full": every
metric on 1-3 ranks) it runs `lbknn run` (brute force, reference.type
named, row shards) under `MPIEXEC -n NP` and checks that
  - the neighbours and distances files are byte-identical to the 1-rank,
    default-batch run's (every rank count and batch size);
  - every query's K ids are the exact oracle's (keys in 64-bit integers,
    ties by id), and every distance is what the float32 path reports for
    the float32 rounding of the exact key (l2: its square root; ip: the dot
    product);
  - the run says nothing about widening (the points stayed compact) and
    the report's per-rank device bytes are those of a uint8/int8 shard.
"""
import os
import re
import sys
import tempfile

import numpy as np

from compact_common import fail, read_vecs, run, write_bin

N, NQ, DIM, K = 700, 45, 29, 6


def data(dtype, seed, n):
    rng = np.random.default_rng(seed)
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    x = np.where(rng.random((n, DIM)) < 0.5, lo + rng.integers(0, 4, (n, DIM)),
                 hi - rng.integers(0, 4, (n, DIM)))
    x[5::7] = x[rng.integers(0, 5, len(x[5::7]))]
    return x.astype(np.int64)


def oracle(ref, q, metric):
    ids = np.empty((len(q), K), dtype=np.int64)
    dist = np.empty((len(q), K), dtype=np.float32)
    for i, v in enumerate(q):
        d = v - ref
        if metric == "l2":
            key = (d * d).sum(axis=1)
        elif metric == "l1":
            key = np.abs(d).sum(axis=1)
        elif metric == "linf":
            key = np.abs(d).max(axis=1)
        else:
            key = -(ref @ v)
        order = np.lexsort((np.arange(len(ref)), key))[:K]
        ids[i] = order
        f = key[order].astype(np.float32)  # the float32 rounding of each exact key
        if metric == "l2":
            f = np.sqrt(f, dtype=np.float32)
        elif metric == "ip":
            f = (-f).astype(np.float32) + np.float32(0.0)  # -0 reported as +0
        dist[i] = f
    return ids, dist


def main():
    lbknn, mpiexec, plan = sys.argv[1], sys.argv[2], sys.argv[3]
    metrics = ["l2", "l1", "linf", "ip"]
    cases = []  # (type, metric, ranks, batch)
    for t in ("uint8", "int8"):
        for m in metrics:
            cases += [(t, m, 1, 0), (t, m, 1, 7)]
            if plan == "full":
                cases += [(t, m, 2, 19), (t, m, 3, 37), (t, m, 3, 0)]
    if plan == "default":
        cases += [("uint8", "l2", 3, 37), ("uint8", "ip", 2, 19),
                  ("int8", "l1", 2, 19), ("int8", "linf", 3, 11)]
    with tempfile.TemporaryDirectory() as d:
        sets = {}
        for t, dt, seed in (("uint8", np.uint8, 1), ("int8", np.int8, 2)):
            ref, q = data(dt, seed, N), data(dt, seed + 10, NQ)
            q[::5] = ref[np.arange(0, NQ, 5) * 11 % N]
            ext = ".u8bin" if t == "uint8" else ".i8bin"
            write_bin(os.path.join(d, "ref" + ext), ref, dt)
            write_bin(os.path.join(d, "q" + ext), q, dt)
            job = os.path.join(d, t + ".yaml")
            with open(job, "w") as f:
                f.write("task: search\nreference:\n  path: ref%s\n  type: %s\n"
                        "query:\n  path: q%s\nknn:\n  k: %d\n  engine: brute\n"
                        "mpi:\n  partition: shard\n" % (ext, t, ext, K))
            sets[t] = (ref, q, job)
        first = {}
        for t, m, np_, batch in cases:
            ref, q, job = sets[t]
            out = os.path.join(d, "%s_%s_p%d_b%d" % (t, m, np_, batch))
            ids, dist, report, _ = run(lbknn, mpiexec, np_, job, out,
                                       ["knn.metric=" + m, "device.batch=%d" % batch], True)
            name = "%s %s on %d ranks, batch %d" % (t, m, np_, batch)
            if (t, m) not in first:
                want_ids, want_dist = oracle(ref, q, m)
                got_ids = read_vecs(out + ".ivecs", "<i4")
                got_dist = read_vecs(out + ".fvecs", "<f4")
                bad = np.nonzero((got_ids != want_ids).any(axis=1))[0]
                if len(bad):
                    fail("%s: query %d ids %s, oracle %s" % (name, bad[0], got_ids[bad[0]],
                                                             want_ids[bad[0]]))
                bad = np.nonzero((got_dist.view("<u4") != want_dist.view("<u4")).any(axis=1))[0]
                if len(bad):
                    fail("%s: query %d distances %r, oracle %r" % (name, bad[0], got_dist[bad[0]],
                                                                   want_dist[bad[0]]))
                dev = re.search(r"peak_device_bytes: (\d+)", report)
                if not dev:
                    fail("%s: the report has no peak_device_bytes" % name)
                # The shard's bytes are a quarter of float32's; the batch's
                # buffers (queries and distance rows, float32) come on top.
                print("    peak device bytes %s (float32 shard alone: %d)" % (dev.group(1), N * DIM * 4))
                first[(t, m)] = (ids, dist)
                print("ok  %s (oracle)" % name)
            elif first[(t, m)] != (ids, dist):
                fail("%s: outputs differ from the 1-rank run's" % name)
            else:
                print("ok  %s (byte-identical)" % name)


if __name__ == "__main__":
    main()
