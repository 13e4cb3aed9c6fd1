#!/usr/bin/python3
"""task: graph against a NumPy brute-force oracle.

    graph_oracle.py LBKNN MPIEXEC NP SEED N DIM K [--set KEY=VALUE ...]

Makes N points of dimension DIM on a coarse grid (every coordinate a
multiple of 1/8 in [0, 2), so that float32 keys are exact and ties by id
abound), with a block of K + 3 copies of one point (so that for some of
them more than K + 1 points lie at distance 0 and the point itself is not
among its K + 1 nearest), runs `lbknn run` with task graph under
`MPIEXEC -n NP`, and checks every row of the neighbours file (ids exactly)
and of the distances file (to float32 rounding) against the K nearest
*other* points in (distance, id) order, and, where output.graph is written,
the .npz CSR graph (scipy.sparse.load_npz) against the same.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def oracle(x, k, metric):
    """The K nearest other points of every point: ids and distances."""
    n = len(x)
    ids = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k), dtype=np.float64)
    for i in range(n):
        diff = np.abs(x - x[i])
        if metric == "l2":
            d = np.sqrt((diff * diff).sum(axis=1))
        elif metric == "l1":
            d = diff.sum(axis=1)
        elif metric == "linf":
            d = diff.max(axis=1)
        else:  # ip: the largest dot product is nearest, and is reported as it is
            d = x @ x[i]
        near = -d if metric == "ip" else d.copy()
        near[i] = np.inf  # itself: never its own neighbour
        order = np.lexsort((np.arange(n), near))[:k]
        ids[i], dist[i] = order, d[order]
    return ids, dist


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def compare(name, ids, dist, want_ids, want_dist):
    if ids.shape != want_ids.shape:
        fail(f"{name}: shape {ids.shape}, want {want_ids.shape}")
    rows = np.nonzero((ids != want_ids).any(axis=1))[0]
    if len(rows):
        r = rows[0]
        fail(f"{name}: {len(rows)} rows differ; row {r}: {ids[r].tolist()} "
             f"want {want_ids[r].tolist()}")
    err = np.abs(dist.astype(np.float64) - want_dist)
    if (err > 1e-6 * np.maximum(1.0, np.abs(want_dist))).any():
        r = int(np.argmax(err.max(axis=1)))
        fail(f"{name}: distances of row {r}: {dist[r].tolist()} want {want_dist[r].tolist()}")


def main():
    lbknn, mpiexec, nranks, seed, n, dim, k = sys.argv[1:8]
    sets = sys.argv[8:]
    seed, n, dim, k = int(seed), int(n), int(dim), int(k)
    print(f"seed {seed}: {n} points, dimension {dim}, K = {k}, {nranks} ranks, {' '.join(sets)}")
    rng = np.random.default_rng(seed)
    x = (rng.integers(0, 16, size=(n, dim)) / 8.0).astype(np.float32)
    x[n // 3: n // 3 + k + 3] = x[n // 3]
    metric = "l2"
    for i, s in enumerate(sets):
        if s == "--set" and sets[i + 1].startswith("knn.metric="):
            metric = sets[i + 1].split("=", 1)[1]
    want_ids, want_dist = oracle(x.astype(np.float64), k, metric)
    with tempfile.TemporaryDirectory() as tmp:
        points = os.path.join(tmp, "points.npy")
        np.save(points, x)
        out = {name: os.path.join(tmp, name + ext)
               for name, ext in (("neighbors", ".npy"), ("distances", ".npy"), ("graph", ".npz"))}
        cmd = [mpiexec, "-n", nranks, lbknn, "run", "--quiet", "--set", "task=graph",
               "--set", "reference.path=" + points, "--set", f"knn.k={k}",
               "--set", "device.batch=97"]
        for name, path in out.items():
            cmd += ["--set", f"output.{name}={path}"]
        proc = subprocess.run(cmd + sets, capture_output=True, text=True)
        if proc.returncode != 0:
            fail(f"lbknn exited {proc.returncode}: {proc.stderr.strip()}")
        compare("neighbours file", np.load(out["neighbors"]), np.load(out["distances"]),
                want_ids, want_dist)
        import scipy.sparse
        g = scipy.sparse.load_npz(out["graph"])
        if g.format != "csr" or g.shape != (n, n):
            fail(f"graph: {g.format} {g.shape}, want csr ({n}, {n})")
        if not (np.diff(g.indptr) == k).all():
            fail("graph: a row without exactly K entries")
        compare("graph file", g.indices.reshape(n, k).astype(np.int64),
                g.data.reshape(n, k), want_ids, want_dist)
    print("OK")


if __name__ == "__main__":
    main()
