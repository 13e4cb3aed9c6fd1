"""python.proba: KNeighborsClassifier.predict_proba against scikit-learn's,
for uniform and distance weights, several K, L2 and L1, on random data with
four classes (no ties), also where queries are training points (distance 0:
only those vote); predictions are the first largest probability; softmax
weights against scikit-learn with the same weights as a callable,
exp(-(d - d_min) / T). Classes that are strings and not 0..C-1 map back."""
import numpy as np
from lbk_pytest import check, finish, rng

from sklearn.neighbors import KNeighborsClassifier as SkKNN  # noqa: E402

import lbknn  # noqa: E402

gen = rng(2203)
X = gen.normal(size=(400, 3))
y = np.where(X[:, 0] + gen.normal(scale=0.7, size=400) > 0, 1, 0) + 2 * (X[:, 1] > 0)
Q = np.vstack([gen.normal(size=(150, 3)), X[:30]])

for metric in ("euclidean", "manhattan"):
    for weights in ("uniform", "distance"):
        for k in (1, 4, 9):
            case = f"{metric} {weights} k={k}"
            ours = lbknn.KNeighborsClassifier(k, weights=weights, metric=metric).fit(X, y)
            ref = SkKNN(k, weights=weights, metric=metric, algorithm="brute").fit(X, y)
            p, r = ours.predict_proba(Q), ref.predict_proba(Q)
            check(p.shape == r.shape, f"{case}: shape {p.shape} vs {r.shape}")
            tol = 1e-12 if weights == "uniform" else 1e-6
            check(np.allclose(p, r, rtol=0, atol=tol), f"{case}: largest difference "
                  f"{np.max(np.abs(p - r))}")
            pred = ours.predict(Q)
            check(np.array_equal(pred, ours.classes_[np.argmax(p, axis=1)]),
                  f"{case}: predict is not the first largest probability")
            check(np.array_equal(pred, ref.predict(Q)), f"{case}: predict differs")

for T in (0.07, 1.0, 5.0):
    for metric in ("euclidean", "manhattan"):
        case = f"softmax {metric} T={T}"
        ours = lbknn.KNeighborsClassifier(7, weights="softmax", temperature=T, metric=metric)
        ref = SkKNN(7, metric=metric, algorithm="brute",
                    weights=lambda d, T=T: np.exp(-(d - d.min(axis=1, keepdims=True)) / T))
        p = ours.fit(X, y).predict_proba(Q)
        r = ref.fit(X, y).predict_proba(Q)
        check(np.allclose(p, r, rtol=0, atol=1e-5), f"{case}: largest difference "
              f"{np.max(np.abs(p - r))}")

names = np.array(["zero", "one", "two", "three"])[y]
ours = lbknn.KNeighborsClassifier(5).fit(X, names)
ref = SkKNN(5, algorithm="brute").fit(X, names)
check(list(ours.classes_) == list(ref.classes_), f"classes_ {ours.classes_}")
check(np.array_equal(ours.predict(Q), ref.predict(Q)), "string labels: predictions differ")
check(np.allclose(ours.predict_proba(Q), ref.predict_proba(Q), atol=1e-12),
      "string labels: probabilities differ")
# Labels far from 0..C-1 (the library sees 0..C-1).
big = np.array([-7, 1000, 3, 10**9])[y]
ours = lbknn.KNeighborsClassifier(5).fit(X, big)
check(np.array_equal(ours.predict(Q), SkKNN(5, algorithm="brute").fit(X, big).predict(Q)),
      "labels -7, 3, 1000, 1e9: predictions differ")
finish()
