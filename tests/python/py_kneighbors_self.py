"""python.kneighbors_self: kneighbors(X=None) leaves each point itself
out, as scikit-learn does (K + 1 searched, the point's own column dropped,
or, where the point is not among them, the last: the K nearest other
points in lbknn's (distance, index) order, as `lbknn run`'s task graph). Compared with
scikit-learn's NearestNeighbors on random data (no ties: the same ids and
distances to float32 precision) for L2, L1, Linf and cosine, on both
engines, with n_neighbors given and by default, for all three estimators
and for kneighbors_graph;
and on a set of many duplicates, where the point itself may be missing
from its own K + 1, with an independent NumPy implementation of that rule
(ties to the smaller index, lbknn's order)."""
import numpy as np
from lbk_pytest import check, finish, rng

from sklearn.neighbors import NearestNeighbors as SkNN  # noqa: E402

import lbknn  # noqa: E402

gen = rng(2201)
X = gen.normal(size=(300, 4))
y = gen.integers(0, 3, size=300)
t = gen.normal(size=300)

for metric in ("euclidean", "manhattan", "chebyshev", "cosine"):
    ref = SkNN(n_neighbors=6, metric=metric, algorithm="brute").fit(X)
    rd, ri = ref.kneighbors()
    for algorithm in ("kd_tree", "brute"):
        if metric == "cosine" and algorithm == "kd_tree":
            continue
        for est in (lbknn.NearestNeighbors(n_neighbors=6, metric=metric, algorithm=algorithm),
                    lbknn.KNeighborsClassifier(6, metric=metric, algorithm=algorithm),
                    lbknn.KNeighborsRegressor(6, metric=metric, algorithm=algorithm)):
            case = f"{type(est).__name__} {metric} {algorithm}"
            est.fit(X, None if isinstance(est, lbknn.NearestNeighbors) else
                    (y if isinstance(est, lbknn.KNeighborsClassifier) else t))
            d, i = est.kneighbors()
            check(i.shape == (300, 6) and d.shape == (300, 6), f"{case}: shapes {i.shape}")
            check(np.array_equal(i, ri), f"{case}: ids differ from scikit-learn's in "
                  f"{np.sum(np.any(i != ri, axis=1))} rows")
            check(np.allclose(d, rd, rtol=1e-5, atol=1e-6),
                  f"{case}: distances differ by {np.max(np.abs(d - rd))}")
            check(not np.any(i == np.arange(300)[:, None]), f"{case}: a point is its own neighbour")
            # n_neighbors given, larger than the index was built for (a rebuild).
            i3 = est.kneighbors(n_neighbors=9, return_distance=False)
            r3 = ref.kneighbors(n_neighbors=9, return_distance=False)
            check(np.array_equal(i3, r3), f"{case}: n_neighbors=9 ids differ")
            # X given: the point itself is included, as in scikit-learn.
            d1, i1 = est.kneighbors(X[:50], n_neighbors=2)
            rd1, ri1 = ref.kneighbors(X[:50], n_neighbors=2)
            check(np.array_equal(i1, ri1) and np.allclose(d1, rd1, rtol=1e-5, atol=1e-6),
                  f"{case}: kneighbors(X) differs")

# kneighbors_graph, on kneighbors: both modes, X=None and X given.
ours = lbknn.NearestNeighbors(n_neighbors=4).fit(X)
ref = SkNN(n_neighbors=4, algorithm="brute").fit(X)
for mode in ("connectivity", "distance"):
    for args in ((), (X[:30],)):
        g, r = ours.kneighbors_graph(*args, mode=mode), ref.kneighbors_graph(*args, mode=mode)
        check(g.shape == r.shape and g.format == "csr", f"kneighbors_graph {mode}: {g.shape}")
        check(np.allclose(g.toarray(), r.toarray(), rtol=1e-5, atol=1e-6),
              f"kneighbors_graph {mode} {len(args)}: differs from scikit-learn's")

# Duplicates: 4 copies of each of 5 points; with n_neighbors=4 (5 searched)
# a point's own index may be beyond its 5 zero-distance matches.
base = gen.normal(size=(5, 3))
D = np.repeat(base, 4, axis=0)[gen.permutation(20)]
for k in (1, 2, 4, 6):
    est = lbknn.NearestNeighbors(n_neighbors=k, algorithm="brute").fit(D)
    d, i = est.kneighbors()
    dist = np.sqrt(((D[:, None, :] - D[None, :, :]) ** 2).sum(axis=2))
    order = np.argsort(dist, axis=1, kind="stable")[:, :k + 1]
    # The k nearest others in (distance, index) order: the point itself
    # dropped, or, where it is not among the k + 1, the last of them (all k + 1
    # are at distance 0 with lower indices; scikit-learn drops the first
    # there instead, its own order of ties being arbitrary anyway).
    keep = order != np.arange(20)[:, None]
    keep[np.all(keep, axis=1), k] = False
    expect = order[keep].reshape(20, k)
    check(np.array_equal(i, expect), f"duplicates k={k}: ids {i.tolist()} != {expect.tolist()}")
    # scikit-learn breaks ties its own way; the distances agree regardless.
    rd = SkNN(n_neighbors=k, algorithm="brute").fit(D).kneighbors()[0]
    check(np.allclose(d, rd, atol=1e-6), f"duplicates k={k}: distances differ")

# Too many: X=None asks n_neighbors + 1 <= n_samples_fit, as scikit-learn.
est = lbknn.NearestNeighbors(n_neighbors=5).fit(X[:5])
try:
    est.kneighbors()
    check(False, "kneighbors() with n_neighbors = n_samples_fit did not raise")
except ValueError as e:
    check("Expected n_neighbors <= n_samples" in str(e), f"message: {e}")
check(est.kneighbors(n_neighbors=4, return_distance=False).shape == (5, 4), "k = n - 1")
finish()
