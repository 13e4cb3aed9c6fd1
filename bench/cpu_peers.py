#!/usr/bin/python3
"""The peers of bench/cpu.sh, each on the same files lbknn reads:

    cpu_peers.py fashion DIR METRIC WEIGHTS [QUERIES]   FAISS IndexFlatL2 (l2, uniform) or
                                                         scikit-learn brute (any), search s
    cpu_peers.py tree-build POINTS.fvecs [REPS]          cKDTree(balanced_tree=True, leafsize=16)
    cpu_peers.py tree-query POINTS.fvecs QUERIES.fvecs K  its query, workers=2
    cpu_peers.py blobs DIR K                             FAISS and scikit-learn on DIR/reference.fvecs
                                                         and DIR/query.fvecs (lbknn generate)
    cpu_peers.py graph POINTS.fvecs K                    cKDTree build + query(X, k=K+1, workers=2):
                                                         the kNN graph (bench/graph_peers.py's), one run

Each prints one line "name seconds [accuracy]" per measurement; times are the
median of REPS (default 3) where it says so, else one run. Run it under
bench/peers.sh, which picks the BLAS core for this CPU."""
import os
import sys
import time

import numpy as np

# The readers and the timer the other peer scripts already have (this
# directory is on sys.path when the script runs).
from fashion_peers import read_idx, vote
from kdtree_peers import median_time
from pbknn_peers import read_fvecs


def fashion(d, metric, weights, nq):
    xb = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float32)
    yb = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    xq = read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype(np.float32)[:nq]
    yq = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)[:nq]
    if metric == "l2" and weights == "uniform":
        import faiss
        index = faiss.IndexFlatL2(xb.shape[1])
        index.add(xb)
        t0 = time.perf_counter()
        _, ids = index.search(xq, 5)
        t = time.perf_counter() - t0
        print(f"faiss_flat_l2 {t:.3f} {float(np.mean(vote(yb[ids]) == yq)):.4f}")
    from sklearn.neighbors import KNeighborsClassifier
    clf = KNeighborsClassifier(n_neighbors=5, algorithm="brute",
                               metric="euclidean" if metric == "l2" else "manhattan",
                               weights=weights).fit(xb, yb)
    t0 = time.perf_counter()
    pred = clf.predict(xq)
    t = time.perf_counter() - t0
    print(f"sklearn_brute_{metric}_{weights} {t:.3f} {float(np.mean(pred == yq)):.4f}")


def tree_build(path, reps):
    from scipy.spatial import cKDTree
    x = read_fvecs(path)
    t = median_time(lambda: cKDTree(x, leafsize=16, balanced_tree=True), reps)
    print(f"ckdtree_build {t:.3f}")


def tree_query(ref, qry, k):
    from scipy.spatial import cKDTree
    x, q = read_fvecs(ref), read_fvecs(qry)
    tree = cKDTree(x, leafsize=16, balanced_tree=True)
    t = median_time(lambda: tree.query(q, k=k, workers=2), 3)
    print(f"ckdtree_query_workers2 {t:.3f}")


def graph(path, k):
    from scipy.spatial import cKDTree
    x = read_fvecs(path)
    t0 = time.perf_counter()
    cKDTree(x, leafsize=16, balanced_tree=True).query(x, k=k + 1, workers=2)
    print(f"ckdtree_graph {time.perf_counter() - t0:.3f}")


def blobs(d, k):
    import faiss
    from sklearn.neighbors import KNeighborsClassifier
    xb, xq = read_fvecs(os.path.join(d, "reference.fvecs")), read_fvecs(os.path.join(d, "query.fvecs"))
    yb = np.fromfile(os.path.join(d, "reference-labels.ivecs"), dtype=np.int32).reshape(-1, 2)[:, 1]
    index = faiss.IndexFlatL2(xb.shape[1])
    index.add(xb)
    t = median_time(lambda: index.search(xq, k), 3)
    print(f"faiss_flat_l2 {t:.3f}")
    clf = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(xb, yb)
    t = median_time(lambda: clf.predict(xq), 3)
    print(f"sklearn_brute {t:.3f}")


def main():
    a = sys.argv[1:]
    if a and a[0] == "fashion" and len(a) >= 4:
        fashion(a[1], a[2], a[3], int(a[4]) if len(a) > 4 else 10000)
    elif a and a[0] == "tree-build" and len(a) >= 2:
        tree_build(a[1], int(a[2]) if len(a) > 2 else 3)
    elif a and a[0] == "tree-query" and len(a) == 4:
        tree_query(a[1], a[2], int(a[3]))
    elif a and a[0] == "blobs" and len(a) == 3:
        blobs(a[1], int(a[2]))
    elif a and a[0] == "graph" and len(a) == 3:
        graph(a[1], int(a[2]))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
