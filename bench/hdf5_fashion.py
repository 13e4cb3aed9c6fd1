#!/usr/bin/python3
"""Fashion-MNIST in the ann-benchmarks HDF5 layout, and lbknn's task search on it
against the file's float64 ground truth (bench/hdf5.sh runs it).

    hdf5_fashion.py LBKNN DIR K

Writes DIR/fashion-mnist-784-euclidean.hdf5 as ann-benchmarks does: `train`
(60000 x 784) and `test` (10000 x 784) float32 pixels, `neighbors` int32 and
`distances` float32 of the K nearest by scikit-learn's NearestNeighbors
(brute, euclidean, float64 arithmetic); then runs `lbknn run` with
task search, reference and query from the file's datasets, and
query.neighbors/distances naming the ground truth, and prints the report's
ground-truth line: the fraction of queries whose K ids and whose K distances
equal the file's.
"""
import gzip
import os
import subprocess
import sys
import time

import h5py
import numpy as np
import yaml
from sklearn.neighbors import NearestNeighbors

SRC = "/usr/share/datasets/fashion-mnist"


def idx_images(name):
    with gzip.open(os.path.join(SRC, name)) as f:
        raw = f.read()
    n, rows, cols = np.frombuffer(raw[4:16], dtype=">i4")
    return np.frombuffer(raw[16:], dtype=np.uint8).reshape(n, rows * cols).astype(np.float32)


def main():
    lbknn, out_dir, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "fashion-mnist-784-euclidean.hdf5")
    train = idx_images("train-images-idx3-ubyte.gz")
    test = idx_images("t10k-images-idx3-ubyte.gz")
    t0 = time.perf_counter()
    nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric="euclidean")
    dist, ids = nn.fit(train.astype(np.float64)).kneighbors(test.astype(np.float64))
    print(f"ground truth: scikit-learn brute, float64, {time.perf_counter() - t0:.1f} s")
    with h5py.File(path, "w") as f:
        f.attrs["distance"] = "euclidean"
        f.create_dataset("train", data=train)
        f.create_dataset("test", data=test)
        f.create_dataset("neighbors", data=ids.astype(np.int32))
        f.create_dataset("distances", data=dist.astype(np.float32))
    report = os.path.join(out_dir, "report.yaml")
    cmd = [lbknn, "run", "--quiet", "--set", "task=search",
           "--set", "reference.path=" + path, "--set", "reference.dataset=train",
           "--set", "query.path=" + path, "--set", "query.dataset=test",
           "--set", "query.neighbors=" + path, "--set", "query.distances=" + path,
           "--set", f"knn.k={k}", "--set", "output.report=" + report]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"lbknn run: {time.perf_counter() - t0:.1f} s end to end")
    with open(report) as f:
        print("ground_truth:", yaml.safe_load(f)["ground_truth"])


if __name__ == "__main__":
    main()
