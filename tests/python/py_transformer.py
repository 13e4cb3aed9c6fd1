"""python.transformer: lbknn.KNeighborsTransformer in scikit-learn's
pipelines, against scikit-learn's own KNeighborsTransformer on a data set
without distance ties (continuous draws):

- the graph itself: the same rows, columns and distances (to float32's
  rounding), in both modes, for fit_transform (each point its own first
  neighbour at distance 0) and for transform of new points;
- Pipeline(transformer, Isomap(metric='precomputed')): the same embedding;
- Pipeline(transformer, DBSCAN(metric='precomputed')): the same labels;
- Pipeline(transformer, KNeighborsClassifier(metric='precomputed')): the
  same predictions."""
import numpy as np
from lbk_pytest import check, finish, rng

from sklearn.cluster import DBSCAN  # noqa: E402
from sklearn.manifold import Isomap  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier as SkC  # noqa: E402
from sklearn.neighbors import KNeighborsTransformer as SkT  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

import lbknn  # noqa: E402

gen = rng(3709)
K = 8
# A noisy S-curve-like sheet in 3-d (Isomap's kind of data), and clusters.
t = gen.uniform(-1.5 * np.pi, 1.5 * np.pi, size=150)
X = np.column_stack([np.sin(t), gen.uniform(0, 2, size=150), np.sign(t) * (np.cos(t) - 1)])
X += gen.normal(scale=0.02, size=X.shape)
Q = X[:20] + gen.normal(scale=0.05, size=(20, 3))


def same_graph(a, b, what):
    a, b = a.tocsr(copy=True), b.tocsr(copy=True)
    a.sort_indices()
    b.sort_indices()
    same = (a.shape == b.shape and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices))
    check(same, f"{what}: structure differs (shape {a.shape} vs {b.shape})")
    if same:
        check(np.allclose(a.data, b.data, rtol=1e-6, atol=1e-6),
              f"{what}: values differ by up to {np.max(np.abs(a.data - b.data)):.3g}")


for mode in ("distance", "connectivity"):
    ours, theirs = lbknn.KNeighborsTransformer(n_neighbors=K, mode=mode), SkT(n_neighbors=K,
                                                                             mode=mode)
    g = ours.fit_transform(X)
    same_graph(g, theirs.fit_transform(X), f"{mode}: fit_transform")
    same_graph(ours.transform(Q), theirs.transform(Q), f"{mode}: transform")
    per_row = K + (mode == "distance")
    check(g.shape == (len(X), len(X)) and np.all(np.diff(g.indptr) == per_row),
          f"{mode}: {per_row} neighbours per row expected, shape {g.shape}")
    if mode == "distance":
        first = g.indices[g.indptr[:-1]]
        check(np.array_equal(first, np.arange(len(X))) and np.all(g.data[g.indptr[:-1]] == 0),
              "distance mode: each point is its own first neighbour at distance 0")
    check(list(ours.get_feature_names_out())[:2] == list(theirs.get_feature_names_out())[:2],
          "get_feature_names_out as scikit-learn's")

iso = [make_pipeline(T(n_neighbors=K, mode="distance"),
                     Isomap(n_neighbors=K, n_components=2, metric="precomputed",
                            eigen_solver="dense")).fit_transform(X)
       for T in (lbknn.KNeighborsTransformer, SkT)]
check(np.allclose(iso[0], iso[1], rtol=1e-4, atol=1e-4 * np.abs(iso[1]).max()),
      f"Isomap: embeddings differ by up to {np.max(np.abs(iso[0] - iso[1])):.3g}")

blobs = np.concatenate([gen.normal(loc=c, scale=0.3, size=(60, 2)) for c in (0, 3, 6)])
blobs = np.concatenate([blobs, gen.uniform(-2, 8, size=(15, 2))])
labels = [make_pipeline(T(n_neighbors=10, mode="distance"),
                        DBSCAN(eps=0.35, min_samples=5, metric="precomputed")).fit_predict(blobs)
          for T in (lbknn.KNeighborsTransformer, SkT)]
print(f"DBSCAN: {len(set(labels[1]) - {-1})} clusters, {np.sum(labels[1] == -1)} noise points")
check(np.array_equal(labels[0], labels[1]), "DBSCAN: labels differ")

y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
pred = [make_pipeline(T(n_neighbors=K, mode="distance"),
                      SkC(n_neighbors=5, metric="precomputed")).fit(X, y).predict(Q)
        for T in (lbknn.KNeighborsTransformer, SkT)]
check(np.array_equal(pred[0], pred[1]), "KNeighborsClassifier(metric='precomputed'): differs")
finish()
