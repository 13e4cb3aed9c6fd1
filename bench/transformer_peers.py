#!/usr/bin/python3
"""lbknn's scikit-learn drop-ins (issue 37) against scikit-learn itself,
side by side in one run (bench/transformer.sh runs it):

  graph     KNeighborsTransformer(n_neighbors=K, mode="distance")
            .fit_transform(X): the kNN graph a Pipeline hands to Isomap,
            DBSCAN, TSNE, ..., on a low-dimensional set (lbknn's k-d tree,
            scikit-learn's kd_tree) and a 64-d one (brute force: lbknn's
            engine, scikit-learn's BLAS), n_jobs=-1 for both; lbknn also
            with n_jobs=1 (its share of the cores honoured: the ratio to
            n_jobs=-1 is the point);
  p1        KNeighborsClassifier(p=1, weights="distance") fit + predict:
            the Manhattan metric that lbknn used to drop;
  callable  the same with weights=f (f(d) = 1 / (1 + d)), which lbknn
            applies on the host: its cost over weights="distance".

Each contender runs in a process of its own (another library's idle
threads spinning in the same process would cost it), timed inside it
around the call only (data generated before), medians of --rounds
interleaved rounds. The outputs are compared once: lbknn's graph and
predictions against scikit-learn's (rows/queries that differ, with the
largest distance difference)."""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

SETS = {"tree": (200_000, 3), "brute": (20_000, 64)}
K = 10
QUERIES = 5_000


def data(kind, seed=42):
    n, dim = SETS[kind]
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, dim)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0.5)
    Q = gen.normal(size=(QUERIES, dim)).astype(np.float32)
    return X, y, Q


def contender(name, kind, out=None):
    """Run one contender in this process; print its seconds as JSON."""
    X, y, Q = data(kind)
    if name.startswith("lbknn"):
        import lbknn as lib
    else:
        import sklearn.neighbors as lib
    extra = {"n_jobs": 1} if name.endswith("n_jobs=1") else {"n_jobs": -1}
    task = name.split(":")[1]
    t0 = time.perf_counter()
    if task == "graph":
        result = lib.KNeighborsTransformer(n_neighbors=K, mode="distance",
                                           **extra).fit_transform(X)
    else:
        weights = "distance" if task == "p1" else (lambda d: 1.0 / (1.0 + d))
        result = lib.KNeighborsClassifier(K, p=1, weights=weights, **extra).fit(X, y).predict(Q)
    seconds = time.perf_counter() - t0
    if out:
        if task == "graph":
            np.savez(out, indices=result.indices, data=result.data, indptr=result.indptr)
        else:
            np.save(out, result)
    print(json.dumps({"seconds": seconds}))


def warm():
    # The first lbknn process compiles its kernels (then cached on disk):
    # not part of any round.
    for kind in SETS:
        subprocess.run([sys.executable, __file__, "--one", "lbknn:graph", kind], check=True,
                       capture_output=True)


def compare(kind, task, tmp):
    import os
    files = {}
    for who in ("lbknn", "sklearn"):
        path = os.path.join(tmp, f"{who}-{kind}-{task}" + (".npz" if task == "graph" else ".npy"))
        subprocess.run([sys.executable, __file__, "--one", f"{who}:{task}", kind, "--out", path],
                       check=True, capture_output=True)
        files[who] = np.load(path)
    a, b = files["lbknn"], files["sklearn"]
    if task == "graph":
        ia, ib = a["indices"].reshape(-1, K + 1), b["indices"].reshape(-1, K + 1)
        da, db = a["data"].reshape(-1, K + 1), b["data"].reshape(-1, K + 1)
        rows = np.flatnonzero(np.any(ia != ib, axis=1))
        return (f"{len(rows)} of {len(ia)} rows' ids differ; largest distance difference "
                f"{np.max(np.abs(da - db)):.3g} (float32 against float64)")
    return f"{np.sum(a != b)} of {len(a)} predictions differ"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--one", nargs=2, metavar=("CONTENDER", "SET"))
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.one:
        contender(a.one[0], a.one[1], a.out)
        return
    import tempfile
    warm()
    cases = [("tree", "graph", ["lbknn:graph", "lbknn:graph:n_jobs=1", "sklearn:graph"]),
             ("brute", "graph", ["lbknn:graph", "lbknn:graph:n_jobs=1", "sklearn:graph"]),
             ("tree", "p1", ["lbknn:p1", "lbknn:callable", "sklearn:p1", "sklearn:callable"])]
    times = {}
    for r in range(a.rounds):
        for kind, _, names in cases:
            for name in names:
                run = subprocess.run([sys.executable, __file__, "--one", name, kind], check=True,
                                     capture_output=True, text=True)
                times.setdefault((kind, name), []).append(json.loads(run.stdout)["seconds"])
    print(f"| set | contender | median s ({a.rounds} rounds) | min .. max |")
    print("|---|---|---|---|")
    med = {key: statistics.median(v) for key, v in times.items()}
    for (kind, name), v in times.items():
        n, dim = SETS[kind]
        print(f"| {n} x {dim} | {name} | {med[kind, name]:.3f} | {min(v):.3f} .. {max(v):.3f} |")
    print()
    for kind in ("tree", "brute"):
        base = med[kind, "lbknn:graph"]
        print(f"graph {kind}: scikit-learn / lbknn = {med[kind, 'sklearn:graph'] / base:.2f}; "
              f"lbknn n_jobs=1 / n_jobs=-1 = {med[kind, 'lbknn:graph:n_jobs=1'] / base:.2f}")
    p1, call = med["tree", "lbknn:p1"], med["tree", "lbknn:callable"]
    print(f"p=1 classifier: scikit-learn / lbknn = {med['tree', 'sklearn:p1'] / p1:.2f}; "
          f"callable weights: scikit-learn / lbknn = {med['tree', 'sklearn:callable'] / call:.2f}, "
          f"lbknn callable / distance = {call / p1:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, task, _ in cases:
            print(f"outputs, {kind} {task}: {compare(kind, task, tmp)}")
        print(f"outputs, tree callable: {compare('tree', 'callable', tmp)}")


if __name__ == "__main__":
    main()
