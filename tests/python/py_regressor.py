"""python.regressor: KNeighborsRegressor against scikit-learn's, on random
data without ties: uniform means equal to rounding (the same neighbours,
float64 sums), 1/distance means to float32 distance precision; queries that
are training points take that point's target alone (scikit-learn's
zero-distance rule; not for cosine, where a point's distance to itself
is a rounding error); integer targets; L1 and cosine; score is R^2."""
import numpy as np
from lbk_pytest import check, finish, rng

from sklearn.metrics import r2_score  # noqa: E402
from sklearn.neighbors import KNeighborsRegressor as SkReg  # noqa: E402

import lbknn  # noqa: E402

gen = rng(2202)
X = gen.normal(size=(500, 5))
y = X[:, 0] * 3 - X[:, 1] ** 2 + gen.normal(scale=0.1, size=500)
Q = gen.normal(size=(200, 5))

for metric in ("euclidean", "manhattan", "cosine"):
    for weights in ("uniform", "distance"):
        for k in (1, 5, 17):
            case = f"{metric} {weights} k={k}"
            ours = lbknn.KNeighborsRegressor(k, weights=weights, metric=metric).fit(X, y)
            ref = SkReg(k, weights=weights, metric=metric, algorithm="brute").fit(X, y)
            p, r = ours.predict(Q), ref.predict(Q)
            check(p.dtype == np.float64 and p.shape == (200,), f"{case}: {p.dtype} {p.shape}")
            rtol = 1e-12 if weights == "uniform" else 1e-5
            check(np.allclose(p, r, rtol=rtol, atol=1e-12 if weights == "uniform" else 1e-6),
                  f"{case}: largest difference {np.max(np.abs(p - r))}")
            # Training points as queries: with distance weights, their own
            # target (cosine: 1 - cos of a point with itself is a rounding
            # error, not always 0, in float32 as in float64).
            pt = ours.predict(X[:40])
            if weights == "distance" and metric != "cosine":
                check(np.array_equal(pt, y[:40]), f"{case}: a training point's own target "
                      f"not returned (max diff {np.max(np.abs(pt - y[:40]))})")
            check(np.allclose(pt, ref.predict(X[:40]), rtol=rtol, atol=1e-6),
                  f"{case}: training points differ")
            s = ours.score(Q, r)
            check(np.isclose(s, r2_score(r, p)), f"{case}: score {s}")

yi = (y * 10).astype(np.int64)
p = lbknn.KNeighborsRegressor(5).fit(X, yi).predict(Q)
r = SkReg(5, algorithm="brute").fit(X, yi).predict(Q)
check(np.allclose(p, r, rtol=1e-12), "integer targets differ")
finish()
