#!/usr/bin/python3
"""Embedding workload: data and peers for bench/embedding.sh.

    embedding_peers.py generate DIR [--points N] [--queries N] [--dim D]
                       [--classes C] [--sigma S] [--seed S]
    embedding_peers.py faiss DIR [--k 20] [--temperature 0.07]
    embedding_peers.py sklearn DIR [--k 20] [--temperature 0.07] [--queries N]

generate writes DIR/reference.npy, DIR/query.npy (float32, C order) and
DIR/reference-labels.npy, DIR/query-labels.npy (int32): Gaussian blobs around
C random centres in D dimensions (sigma: the noise's standard deviation per
coordinate, the centres' being 1), written chunk by chunk so that memory
stays near one copy. Deterministic for a seed.

faiss: IndexFlatIP on L2-normalised vectors (= cosine), K neighbours, the
softmax vote exp(cos / T) per class (DINO's weighted kNN), top-1 and top-5
accuracy (ties to the smaller label, as lbknn).

sklearn: KNeighborsClassifier(algorithm='brute', metric='cosine') with the
same softmax weights (a callable of the cosine distance), predict_proba on
the first --queries queries (default 1000: scikit-learn is slow here); its
time is reported as measured and scaled to all queries.

Every timed line: "NAME: search S s ...". The BLAS library and its kernel
(threadpoolctl) are printed first: OPENBLAS_CORETYPE is set by the caller.
"""
import argparse
import os
import sys
import time

import numpy as np


def generate(a):
    rng = np.random.default_rng(a.seed)
    centres = rng.standard_normal((a.classes, a.dim)).astype(np.float32)
    os.makedirs(a.dir, exist_ok=True)
    for name, rows, seed in (("reference", a.points, a.seed + 1), ("query", a.queries, a.seed + 2)):
        r = np.random.default_rng(seed)
        labels = r.integers(0, a.classes, rows).astype(np.int32)
        x = np.lib.format.open_memmap(os.path.join(a.dir, name + ".npy"), mode="w+",
                                      dtype=np.float32, shape=(rows, a.dim))
        for i in range(0, rows, 65536):
            j = min(rows, i + 65536)
            noise = r.standard_normal((j - i, a.dim), dtype=np.float32)
            x[i:j] = centres[labels[i:j]] + np.float32(a.sigma) * noise
        x.flush()
        del x
        np.save(os.path.join(a.dir, name + "-labels.npy"), labels)
    print(f"# wrote {a.points} x {a.dim} references and {a.queries} queries, "
          f"{a.classes} classes, sigma {a.sigma}, seed {a.seed}, to {a.dir}")


def load(d, name, rows=None):
    x = np.load(os.path.join(d, name + ".npy"), mmap_mode="r")
    y = np.load(os.path.join(d, name + "-labels.npy"))
    if rows is not None:
        x, y = x[:rows], y[:rows]
    return np.array(x, dtype=np.float32), y.astype(np.int64)


def accuracy(scores, classes, truth):
    """Top-1 and top-5 with lbknn's rule: classes ranked by score, then by
    label (a stable sort of -score keeps the smaller label first)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    top1 = classes[order[:, 0]] == truth
    top5 = (classes[order[:, :5]] == truth[:, None]).any(axis=1)
    return top1.mean(), top5.mean()


def blas_info():
    try:
        from threadpoolctl import threadpool_info
        info = [f"{i.get('internal_api')}/{i.get('architecture')}/{i.get('num_threads')} threads"
                for i in threadpool_info()]
        print("# threadpoolctl: " + ", ".join(info) +
              f"; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}")
    except ImportError:
        print("# threadpoolctl not installed")


def run_faiss(a):
    import faiss
    xb, yb = load(a.dir, "reference")
    xq, yq = load(a.dir, "query")
    blas_info()
    t0 = time.perf_counter()
    faiss.normalize_L2(xb)
    faiss.normalize_L2(xq)
    index = faiss.IndexFlatIP(xb.shape[1])
    index.add(xb)
    t1 = time.perf_counter()
    sims, ids = index.search(xq, a.k)
    t2 = time.perf_counter()
    classes = np.arange(int(yb.max()) + 1)
    w = np.exp((sims - sims[:, :1]) / a.temperature)
    scores = np.zeros((len(xq), len(classes)))
    np.add.at(scores, (np.arange(len(xq))[:, None], yb[ids]), w)
    top1, top5 = accuracy(scores, classes, yq)
    print(f"faiss IndexFlatIP: search {t2 - t1:.3f} s (normalise + add {t1 - t0:.3f} s), "
          f"{faiss.omp_get_max_threads()} threads, top-1 {top1:.4f}, top-5 {top5:.4f}")


def run_sklearn(a):
    from sklearn.neighbors import KNeighborsClassifier
    xb, yb = load(a.dir, "reference")
    total = np.load(os.path.join(a.dir, "query.npy"), mmap_mode="r").shape[0]
    xq, yq = load(a.dir, "query", a.queries)
    blas_info()
    temperature = a.temperature
    clf = KNeighborsClassifier(n_neighbors=a.k, algorithm="brute", metric="cosine",
                               weights=lambda d: np.exp((1.0 - d) / temperature))
    t0 = time.perf_counter()
    clf.fit(xb, yb)
    t1 = time.perf_counter()
    proba = clf.predict_proba(xq)
    t2 = time.perf_counter()
    top1, top5 = accuracy(proba, clf.classes_, yq)
    print(f"sklearn brute cosine: search {(t2 - t1) * total / len(xq):.3f} s scaled to {total} "
          f"queries ({t2 - t1:.3f} s measured on {len(xq)}; fit {t1 - t0:.3f} s), "
          f"top-1 {top1:.4f}, top-5 {top5:.4f} (on those {len(xq)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["generate", "faiss", "sklearn"])
    ap.add_argument("dir")
    ap.add_argument("--points", type=int, default=1000000)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--sigma", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--temperature", type=float, default=0.07)
    a = ap.parse_args()
    if a.mode == "generate":
        a.queries = a.queries or 10000
        generate(a)
    elif a.mode == "faiss":
        run_faiss(a)
    else:
        a.queries = a.queries or 1000
        run_sklearn(a)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
