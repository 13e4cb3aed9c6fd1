#!/usr/bin/python3
"""Fashion-MNIST peers: FAISS IndexFlatL2 and scikit-learn brute force
(KNeighborsClassifier, k = 5, uniform weights), 60000 references x 784,
10000 queries, pixel values 0..255 as float32 (as bench/fashion_bench.c).

    bash -c ". bench/peers.sh && /usr/bin/python3 bench/fashion_peers.py [--dir D] [--queries N]"
(bench/peers.sh installs the peers and picks OPENBLAS_CORETYPE from the CPU flags.)

Reports each library's search time and the uniform-vote accuracy."""
import argparse
import gzip
import os
import time

import numpy as np


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    return arr.reshape(dims[0], -1) if rank > 1 else arr


def vote(labels):
    # majority, ties to the smallest label (scikit-learn's uniform weights)
    counts = np.apply_along_axis(np.bincount, 1, labels, minlength=10)
    return np.argmax(counts, axis=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--skip-sklearn", action="store_true")
    args = ap.parse_args()
    import faiss
    from sklearn.neighbors import KNeighborsClassifier

    d = args.dir
    xb = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float32)
    yb = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    xq = read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype(np.float32)[: args.queries]
    yq = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)[: args.queries]
    print(f"# references {xb.shape}, queries {xq.shape[0]}, K = {args.k}, faiss threads "
          f"{faiss.omp_get_max_threads()}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}")

    index = faiss.IndexFlatL2(xb.shape[1])
    index.add(xb)
    t0 = time.perf_counter()
    _, ids = index.search(xq, args.k)
    t_faiss = time.perf_counter() - t0
    acc = float(np.mean(vote(yb[ids]) == yq))
    print(f"faiss IndexFlatL2: search {t_faiss:.3f} s, accuracy {acc:.4f}")

    if not args.skip_sklearn:
        clf = KNeighborsClassifier(n_neighbors=args.k, algorithm="brute").fit(xb, yb)
        t0 = time.perf_counter()
        pred = clf.predict(xq)
        t_sk = time.perf_counter() - t0
        print(f"sklearn brute KNeighborsClassifier: predict {t_sk:.3f} s, "
              f"accuracy {float(np.mean(pred == yq)):.4f}")


if __name__ == "__main__":
    main()
