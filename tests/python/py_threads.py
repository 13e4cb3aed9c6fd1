"""python.threads: estimators used from several threads at once (they
share a context, which the library lets one thread use at a time; the
package serialises the calls) give the
results of one thread: separate estimators, and one shared estimator whose
index is rebuilt for a larger k while other threads query it."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from lbk_pytest import check, finish, rng

import lbknn  # noqa: E402

gen = rng(2208)
X = gen.normal(size=(400, 4))
y = gen.integers(0, 3, size=400)
Q = gen.normal(size=(100, 4))

models = [lbknn.KNeighborsClassifier(k, algorithm=a).fit(X, y)
          for k in (1, 3, 5) for a in ("kd_tree", "brute")]
expected = [m.predict_proba(Q) for m in models]
with ThreadPoolExecutor(6) as pool:
    for rounds in range(5):
        got = list(pool.map(lambda m: m.predict_proba(Q), models))
        check(all(np.array_equal(a, b) for a, b in zip(expected, got)),
              f"round {rounds}: separate estimators differ across threads")

shared = lbknn.NearestNeighbors(n_neighbors=2).fit(X)
want = {k: shared.kneighbors(Q, n_neighbors=k, return_distance=False) for k in range(1, 40)}
shared = lbknn.NearestNeighbors(n_neighbors=2).fit(X)  # anew: its index serves k <= 2
with ThreadPoolExecutor(8) as pool:
    ks = list(range(1, 40)) * 3
    got = list(pool.map(lambda k: shared.kneighbors(Q, n_neighbors=k, return_distance=False), ks))
bad = [k for k, g in zip(ks, got) if not np.array_equal(g, want[k])]
check(not bad, f"a shared estimator, rebuilt while queried: k = {bad} differ")
finish()
