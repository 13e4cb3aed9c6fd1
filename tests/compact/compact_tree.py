#!/usr/bin/python3
"""The k-d tree and the spatial partition over compact points, whole runs.

    compact_tree.py LBKNN MPIEXEC PLAN

Writes low-dimensional uint8 (.u8bin), int8 (.i8bin) and float16 (.npy <f2)
sets whose values sit within 2 of three centres, with repeated rows, so that
exact ties by id abound. For each group of PLAN ("default" or "full") it runs
`lbknn run` under `MPIEXEC -n NP` and checks that
  - the first run of the group (uint8/int8: brute force over one row shard,
    the exact integer keys; float16: the k-d tree over the points widened by
    reference.type float32) is the exact oracle's (keys in 64-bit integers,
    ties by id; float16: NumPy's float32 keys in the engines' order of
    operations, ties by id);
  - every other run (the k-d tree over row shards and under the spatial
    partition, brute force under the spatial partition, on 1-4 ranks) writes
    byte-identical neighbours and distances;
  - no compact run says it widened the points, and the tree's held device
    bytes are those of points at their own width.
Then tasks radius, graph and radius_graph (default: one type each; full:
every type, both engines, every partition): the graph (and counts) over
the compact points are byte-identical to the run over the widened points.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from compact_common import fail, read_vecs, run, write_bin

N, NQ, K = 900, 40, 6


def ints(dtype, rng, n, dim):
    lo = 0 if dtype == np.uint8 else -128
    centres = np.array([lo + 2, lo + 128, lo + 253])
    x = centres[rng.integers(0, 3, (n, dim))] + rng.integers(-2, 3, (n, dim))
    x[5::5] = x[rng.integers(0, 5, len(x[5::5]))]
    return x.astype(np.int64)


def halves(rng, n, dim):
    mant = rng.integers(0, 4, (n, dim)) * 256
    exp = rng.integers(13, 17, (n, dim))
    sign = rng.integers(0, 2, (n, dim)) << 15
    x = (sign | (exp << 10) | mant).astype(np.uint16).view(np.float16)
    x[5::5] = x[rng.integers(0, 5, len(x[5::5]))]
    return x


def key_int(ref, v, metric):
    d = v - ref
    if metric == "l2":
        return (d * d).sum(axis=1)
    if metric == "l1":
        return np.abs(d).sum(axis=1)
    return np.abs(d).max(axis=1)


def key_f32(ref, v, metric):
    """The engines' float32 key: one rounding per step, dimensions ascending."""
    s = np.zeros(len(ref), dtype=np.float32)
    for j in range(ref.shape[1]):
        d = (np.float32(v[j]) - ref[:, j]).astype(np.float32)
        if metric == "l2":
            s = (s + (d * d).astype(np.float32)).astype(np.float32)
        elif metric == "l1":
            s = (s + np.abs(d)).astype(np.float32)
        else:
            s = np.maximum(s, np.abs(d))
    return s


def oracle(ref, q, metric, exact):
    ids = np.empty((len(q), K), dtype=np.int64)
    dist = np.empty((len(q), K), dtype=np.float32)
    for i, v in enumerate(q):
        key = key_int(ref, v, metric) if exact else key_f32(ref, v, metric)
        order = np.lexsort((np.arange(len(ref)), key))[:K]
        ids[i] = order
        f = key[order].astype(np.float32)
        dist[i] = np.sqrt(f, dtype=np.float32) if metric == "l2" else f
    return ids, dist


# (set, metric, dim, [(engine, partition, ranks)]); the first run is the
# oracle-checked reference of its group.
DEFAULT = [
    ("uint8", "l2", 3, [("brute", "shard", 1), ("kdtree", "shard", 1), ("kdtree", "spatial", 3),
                        ("brute", "spatial", 3)]),
    ("int8", "l1", 5, [("brute", "shard", 1), ("kdtree", "spatial", 3), ("brute", "spatial", 2)]),
    ("float16", "l2", 4, [("kdtree", "shard", 1), ("kdtree", "shard", 1), ("kdtree", "spatial", 3),
                          ("brute", "spatial", 2)]),
]
FULL = [(t, m, d, [("brute", "shard", 1), ("kdtree", "shard", 1), ("kdtree", "shard", 3)] +
         [(e, "spatial", p) for e in ("kdtree", "brute") for p in (1, 2, 3, 4)])
        for t in ("uint8", "int8", "float16") for m in ("l2", "l1", "linf") for d in (2, 7)]
EXT = {"uint8": ".u8bin", "int8": ".i8bin", "float16": ".npy"}


def write_set(d, t, dim, seed):
    rng = np.random.default_rng(seed)
    if t == "float16":
        ref, q = halves(rng, N, dim), halves(rng, NQ, dim)
    else:
        dt = np.uint8 if t == "uint8" else np.int8
        ref, q = ints(dt, rng, N, dim), ints(dt, rng, NQ, dim)
    q[::4] = ref[np.arange(0, NQ, 4) * 13 % N]
    base = os.path.join(d, "%s_%d" % (t, dim))
    if t == "float16":
        np.save(base + "_ref.npy", ref)
        np.save(base + "_q.npy", q.astype(np.float32))
    else:
        write_bin(base + "_ref" + EXT[t], ref, np.uint8 if t == "uint8" else np.int8)
        write_bin(base + "_q" + EXT[t], q, np.uint8 if t == "uint8" else np.int8)
    job = base + ".yaml"
    with open(job, "w") as f:
        f.write("task: search\nreference:\n  path: %s\n  type: %s\nquery:\n  path: %s\n"
                "knn:\n  k: %d\n" % (base + "_ref" + EXT[t], t, base + "_q" + EXT[t], K))
    return ref, q, job


def widened_group(lbknn, mpiexec, d, task, t, dim, seed, runs):
    """task radius, graph or radius_graph: the first run over the widened
    points, then (engine, partition, ranks) runs over the compact ones."""
    ref, q, job = write_set(d, t, dim, seed)
    first = None
    for i, (engine, partition, np_) in enumerate([("kdtree", "shard", 1)] + runs):
        out = os.path.join(d, "%s_%s_%d" % (task, t, i))
        cmd = [lbknn, "run", job, "--set", "task=" + task, "--set", "knn.engine=" + engine,
               "--set", "mpi.partition=" + partition, "--set", "output.graph=" + out + ".npz",
               "--set", "output.report=" + out + ".yaml"]
        if task != "graph":
            cmd += ["--set", "knn.radius=3", "--set", "output.counts=" + out + ".npy"]
        if task != "radius":
            cmd += ["--set", "query.path="]
        if i == 0:
            cmd += ["--set", "reference.type=float32"]
        if np_ > 1:
            cmd = [mpiexec, "-n", str(np_)] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            fail("%s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
        # brute force's radius search widens (its kernels read float32)
        if i > 0 and "widened" in p.stderr and not (engine == "brute" and task != "graph"):
            fail("%s: the points were widened: %s" % (task, p.stderr))
        got = []
        for ext in (".npz", ".npy") if task != "graph" else (".npz",):
            with open(out + ext, "rb") as f:
                got.append(f.read())
        name = "%s %s %d-d, %s %s on %d ranks" % (task, t, dim, engine, partition, np_)
        if first is None:
            first = got
            print("ok  %s (widened)" % name)
        elif got != first:
            fail("%s: outputs differ from the widened run's" % name)
        else:
            print("ok  %s (byte-identical)" % name)


def main():
    lbknn, mpiexec, plan = sys.argv[1], sys.argv[2], sys.argv[3]
    groups = DEFAULT if plan == "default" else FULL
    with tempfile.TemporaryDirectory() as d:
        for g, (t, m, dim, runs) in enumerate(groups):
            ref, q, job = write_set(d, t, dim, 100 + g)
            first = None
            for i, (engine, partition, np_) in enumerate(runs):
                widened = t == "float16" and i == 0
                sets = ["knn.metric=" + m, "knn.engine=" + engine, "mpi.partition=" + partition]
                if widened:
                    sets.append("reference.type=float32")
                out = os.path.join(d, "g%d_r%d" % (g, i))
                ids, dist, report, _ = run(lbknn, mpiexec, np_, job, out, sets, not widened)
                name = "%s %s %d-d, %s %s on %d ranks%s" % (
                    t, m, dim, engine, partition, np_, " (widened)" if widened else "")
                if first is None:
                    exact = t != "float16"
                    refv = ref if exact else ref.astype(np.float32)
                    qv = q if exact else q.astype(np.float32)
                    want_ids, want_dist = oracle(refv, qv, m, exact)
                    got_ids = read_vecs(out + ".ivecs", "<i4")
                    got_dist = read_vecs(out + ".fvecs", "<f4")
                    bad = np.nonzero((got_ids != want_ids).any(axis=1))[0]
                    if len(bad):
                        fail("%s: query %d ids %s, oracle %s" % (
                            name, bad[0], got_ids[bad[0]], want_ids[bad[0]]))
                    bad = np.nonzero((got_dist.view("<u4") != want_dist.view("<u4")).any(axis=1))[0]
                    if len(bad):
                        fail("%s: query %d distances %r, oracle %r" % (
                            name, bad[0], got_dist[bad[0]], want_dist[bad[0]]))
                    first = (ids, dist)
                    print("ok  %s (oracle)" % name)
                    continue
                if (ids, dist) != first:
                    fail("%s: outputs differ from the first run's" % name)
                held = re.search(r"held_bytes: (\d+)", report)
                if engine == "kdtree" and partition == "shard" and np_ == 1:
                    value = 2 if t == "float16" else 1
                    # points at their own width and 4-byte ids, plus the bucket
                    # copy (at most 8/7 of them; see tree_buckets.h)
                    most = N * (dim * value + 4) * (1 + 8 / 7)
                    if not held or not N * (dim * value + 4) < int(held.group(1)) <= most:
                        fail("%s: held_bytes %s, not those of %s points (at most %d)" % (
                            name, held.group(1) if held else None, t, most))
                    print("    tree held_bytes %s (%s points: %d)" % (
                        held.group(1), t, N * dim * value))
                print("ok  %s (byte-identical)" % name)
        tree = [("kdtree", "shard", 1), ("kdtree", "spatial", 2)]
        widened_group(lbknn, mpiexec, d, "radius", "uint8", 3, 7, tree[1:])
        widened_group(lbknn, mpiexec, d, "graph", "int8", 3, 8,
                      [("kdtree", "shard", 2), ("kdtree", "spatial", 3), ("brute", "spatial", 2)])
        widened_group(lbknn, mpiexec, d, "radius_graph", "uint8", 4, 9, [("kdtree", "spatial", 2)])
        if plan != "default":
            more = tree + [("kdtree", "shard", 3), ("kdtree", "replicate", 2),
                           ("brute", "shard", 2), ("brute", "spatial", 3)]
            for task in ("radius", "graph", "radius_graph"):
                for g, t in enumerate(("uint8", "int8", "float16")):
                    widened_group(lbknn, mpiexec, d, task, t, 2 + 3 * g, 20 + g, more)


if __name__ == "__main__":
    main()
