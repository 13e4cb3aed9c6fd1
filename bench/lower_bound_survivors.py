#!/usr/bin/env python3
"""How much of a brute-force L2 search a cheaper exact lower bound could skip
(bench/results/cpu.md, run D): for Fashion-MNIST queries, the fraction of
(query, reference) pairs whose lower bound does not exceed the query's K-th
key bound, i.e. the pairs whose exact keys a cascade would still compute.

Bounds: group sums (Cauchy-Schwarz: |q - r|^2 >= sum_G (S_G q - S_G r)^2 / g
for groups G of g dimensions), of g consecutive dimensions or of k x k pixel
blocks, and a PCA projection. K-th key bound: the K-th smallest exact key
among each query's `kp` smallest bounds (what a cascade knows), or the true
K-th key.

    python3 bench/lower_bound_survivors.py [FASHION_DIR] [QUERIES]
"""
import gzip
import sys

import numpy as np

d = sys.argv[1] if len(sys.argv) > 1 else '/usr/share/datasets/fashion-mnist'
nq = int(sys.argv[2]) if len(sys.argv) > 2 else 500
K = 5


def idx(name):
    return np.frombuffer(gzip.open('%s/%s' % (d, name)).read(), np.uint8, offset=16)


X = idx('train-images-idx3-ubyte.gz').reshape(-1, 784).astype(np.float32)
Q = idx('t10k-images-idx3-ubyte.gz').reshape(-1, 784).astype(np.float32)[:nq]
D = (Q**2).sum(1)[:, None] + (X**2).sum(1)[None, :] - 2 * Q @ X.T
true_kth = np.sort(D, 1)[:, K - 1]


def sq_dist(A, B):
    return (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T


def groups(A, g):
    if isinstance(g, int):
        return A.reshape(len(A), -1, g).sum(2), g
    k = int(g[0])
    return A.reshape(len(A), 28 // k, k, 28 // k, k).sum((2, 4)).reshape(len(A), -1), k * k


def report(name, LB):
    row = ['%-26s true K-th %.4f' % (name, (LB <= true_kth[:, None] * 1.0001).mean())]
    for kp in (16, 64):
        cand = np.argsort(LB, 1)[:, :kp]
        kth = np.sort(np.take_along_axis(D, cand, 1), 1)[:, K - 1]
        row.append('kp=%d %.4f' % (kp, (LB <= kth[:, None] * 1.0001).mean()))
    print('  '.join(row))


print('surviving fraction of the pairs, %d queries, K = %d' % (nq, K))
for g in (4, 8, 16, '2x2', '4x4'):
    GX, n = groups(X, g)
    GQ, _ = groups(Q, g)
    report('sums of %s (%d dims)' % (g, GX.shape[1]), sq_dist(GQ, GX) / n)
mean = X.mean(0)
_, _, Vt = np.linalg.svd(X[:20000] - mean, full_matrices=False)
for k in (32, 64, 128):
    P = Vt[:k]
    report('PCA %d' % k, sq_dist((Q - mean) @ P.T, (X - mean) @ P.T))
