"""python.input_layout: every layout and type of the same values gives the
results of C-order float32 rows, for fitting and for queries: float64,
Fortran order, non-contiguous views (strided rows and columns), a
transposed array, big-endian, read-only, lists, integers; and the estimator
keeps its own copy (changing X after fit changes nothing)."""
import numpy as np
from lbk_pytest import check, finish, rng

import lbknn  # noqa: E402

gen = rng(2205)
# Values exact in float32, so that every conversion gives the same floats.
base = np.round(gen.normal(size=(240, 10)) * 64) / 64
y = gen.integers(0, 3, size=240)
t = gen.normal(size=240)
Xc = np.ascontiguousarray(base[:, :5], dtype=np.float32)  # the reference layout
Qc = np.ascontiguousarray(base[200:, :5], dtype=np.float32)
Xf, yf, tf = Xc[:200], y[:200], t[:200]

wide = np.asfortranarray(base.astype(np.float64))
layouts = {
    "float32 C": lambda a: a,
    "float64": lambda a: a.astype(np.float64),
    "float64 Fortran": lambda a: np.asfortranarray(a.astype(np.float64)),
    "float32 Fortran": lambda a: np.asfortranarray(a),
    "strided columns": lambda a: np.repeat(a.astype(np.float64), 2, axis=1)[:, ::2],
    "strided rows": lambda a: np.repeat(a, 3, axis=0)[::3],
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "big-endian": lambda a: a.astype(">f8"),
    "read-only": lambda a: _readonly(a.astype(np.float64)),
    "list": lambda a: a.tolist(),
}


def _readonly(a):
    a.setflags(write=False)
    return a


def results(fit_X, query):
    c = lbknn.KNeighborsClassifier(5, weights="distance").fit(fit_X, yf)
    r = lbknn.KNeighborsRegressor(4).fit(fit_X, tf)
    n = lbknn.NearestNeighbors(n_neighbors=6).fit(fit_X)
    return [c.predict(query), c.predict_proba(query), r.predict(query), *n.kneighbors(query),
            n.kneighbors(return_distance=False)]


expected = results(Xf, Qc)
for name, f in layouts.items():
    got_fit = results(f(Xf), Qc)
    got_query = results(Xf, f(Qc))
    check(all(np.array_equal(a, b) for a, b in zip(expected, got_fit)),
          f"{name}: fitting gives other results than C float32")
    check(all(np.array_equal(a, b) for a, b in zip(expected, got_query)),
          f"{name}: queries give other results than C float32")

# Integers: int64 and int32 against the same values in C float32.
Xi = (base[:200, :5] * 64).astype(np.int64)
Qi = (base[200:, :5] * 64).astype(np.int64)
want = results(np.ascontiguousarray(Xi, dtype=np.float32), np.ascontiguousarray(Qi, np.float32))
for dt in (np.int64, np.int32, np.uint8 if Xi.min() >= 0 else np.int16):
    got = results(Xi.astype(dt), Qi.astype(dt))
    check(all(np.array_equal(a, b) for a, b in zip(want, got)), f"{np.dtype(dt)} input differs")

# A view into a wider Fortran array: neither contiguous nor C order.
view = wide[:200, :5]
check(not view.flags.c_contiguous, "the view is not C-contiguous")
check(all(np.array_equal(a, b) for a, b in zip(expected, results(view, wide[200:, :5]))),
      "a Fortran view into a wider array differs")

# The estimator keeps its own copy of the rows.
mine = Xf.copy()
n = lbknn.NearestNeighbors(n_neighbors=6).fit(mine)
before = n.kneighbors(return_distance=False)
mine[:] = 0
check(np.array_equal(before, n.kneighbors(return_distance=False)),
      "changing X after fit changed kneighbors(X=None)")
finish()
