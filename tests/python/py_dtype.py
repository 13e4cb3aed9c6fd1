"""python.dtype: the estimators keep a uint8, int8 or float16 array's type
(issue 42: the library's typed doors) and dtype= forces one. Checked
against a NumPy oracle of exact keys (integers: int64 sums; float16: values
on a grid of quarters, where every float32 sum is exact), lists in (key,
index) order, distances as lbknn reports them (Euclidean: the square root of
the key rounded to float32); dtype_ says what fit kept, get_params and
set_params carry dtype, a pickle keeps it, and conversions a type cannot
hold are refused with a ValueError naming the value."""
import pickle

import numpy as np
from lbk_pytest import check, expect_raises, finish, rng

from sklearn.base import clone  # noqa: E402

import lbknn  # noqa: E402

gen = rng(4242)
K = 5


def oracle(ref, queries, metric, k, skip_self=False):
    """(float64 distances, int64 ids) of the k smallest exact keys."""
    r = ref.astype(np.float64)
    q = queries.astype(np.float64)
    diff = q[:, None, :] - r[None, :, :]
    if metric == "euclidean":
        keys = (diff * diff).sum(axis=2)
    elif metric == "manhattan":
        keys = np.abs(diff).sum(axis=2)
    else:  # ip: the largest dot product first
        keys = -(q @ r.T)
    if skip_self:
        keys[np.arange(len(q)), np.arange(len(q))] = np.inf
    ids = np.empty((len(q), k), dtype=np.int64)
    for i in range(len(q)):
        ids[i] = np.lexsort((np.arange(len(r)), keys[i]))[:k]
    best = np.take_along_axis(keys, ids, axis=1)
    if metric == "euclidean":
        dist = np.sqrt(best.astype(np.float32))
    elif metric == "ip":
        dist = (-best).astype(np.float32)
    else:
        dist = best.astype(np.float32)
    return dist.astype(np.float64), ids


def draw(dtype, shape):
    if dtype == np.uint8:
        return gen.integers(0, 256, shape).astype(np.uint8)
    if dtype == np.int8:
        return gen.integers(-128, 128, shape).astype(np.int8)
    return (gen.integers(-32, 33, shape) / 4).astype(np.float16)


# (type, metric, dimension): named, so that the points stay compact on any device.
for dtype, metric, dim in [(np.uint8, "euclidean", 24), (np.int8, "manhattan", 9),
                           (np.float16, "euclidean", 16), (np.uint8, "ip", 12)]:
    name = np.dtype(dtype).name
    X = draw(dtype, (250, dim))
    Q = draw(dtype, (40, dim))
    y = gen.integers(0, 3, len(X))
    est = lbknn.KNeighborsClassifier(n_neighbors=K, algorithm="brute", metric=metric,
                                     dtype=name).fit(X, y)
    what = f"{name} {metric}"
    check(est.dtype_ == name and est._fit_X.dtype == dtype,
          f"{what}: dtype_ {est.dtype_}, fitted points {est._fit_X.dtype}")
    want_d, want_i = oracle(X, Q, metric, K)
    for queries, kind in [(Q, "typed"), (Q.astype(np.float64), "float64")]:
        d, i = est.kneighbors(queries)
        check(np.array_equal(i, want_i) and np.array_equal(d, want_d),
              f"{what} ({kind} queries): lists differ from the oracle's in "
              f"{int((i != want_i).sum())} ids, {int((d != want_d).sum())} distances")
    votes = y[want_i]
    counts = np.stack([(votes == c).sum(axis=1) for c in range(3)], axis=1)
    pred = est.predict(Q)
    check(np.array_equal(pred, np.argmax(counts, axis=1)), f"{what}: predictions")
    if metric == "euclidean" and dtype == np.uint8:
        # The self search widens the index (and the log says so); its
        # lists are still the oracle's.
        nn = lbknn.NearestNeighbors(n_neighbors=K, algorithm="brute", dtype=name).fit(X)
        sd, si = nn.kneighbors()
        od, oi = oracle(X, X, metric, K, skip_self=True)
        check(np.array_equal(si, oi) and np.array_equal(sd, od), f"{what}: kneighbors()")
        again = pickle.loads(pickle.dumps(est))
        check(again.dtype_ == name and again._fit_X.dtype == dtype and
              np.array_equal(again.kneighbors(Q)[1], want_i), f"{what}: after a pickle")
        r = float(want_d[:, 2].max())
        rad = lbknn.RadiusNeighborsRegressor(radius=r, algorithm="brute", dtype=name).fit(
            X, y.astype(np.float64))
        got = rad.predict(Q)
        within = oracle(X, Q, metric, len(X))
        means = [y[within[1][q][within[0][q] <= r]].mean() for q in range(len(Q))]
        check(np.allclose(got, means, rtol=1e-12, atol=0), f"{what}: radius regression")

# dtype=None (or 'auto') keeps a compact array's type, another array's
# becomes float32; a named type converts, keeping its values.
Xu = draw(np.uint8, (200, 6))
auto = lbknn.NearestNeighbors(algorithm="brute", metric="manhattan").fit(Xu)
check(auto._fit_X.dtype == np.uint8 and auto.dtype_ == "uint8",
      f"auto: {auto._fit_X.dtype}, dtype_ {auto.dtype_}")
wide = lbknn.NearestNeighbors(algorithm="brute").fit(Xu.astype(np.float64))
check(wide._fit_X.dtype == np.float32 and wide.dtype_ == "float32", f"float64: {wide.dtype_}")
forced = lbknn.NearestNeighbors(algorithm="brute", metric="manhattan",
                                dtype="uint8").fit(Xu.astype(np.float64))
check(forced._fit_X.dtype == np.uint8 and np.array_equal(forced._fit_X, Xu),
      "dtype='uint8' from float64 integers")
as32 = lbknn.NearestNeighbors(algorithm="brute", dtype="float32").fit(Xu)
check(as32._fit_X.dtype == np.float32 and as32.dtype_ == "float32", "dtype='float32'")
check(np.array_equal(forced.kneighbors(Xu[:20])[1],
                     oracle(Xu, Xu[:20], "manhattan", 5)[1]), "forced uint8: lists")

# The parameter as scikit-learn's: get_params, set_params, clone.
est = lbknn.KNeighborsRegressor(dtype="int8")
check(est.get_params()["dtype"] == "int8", "get_params")
check(est.set_params(dtype="float16").dtype == "float16", "set_params")
check(clone(est).get_params()["dtype"] == "float16", "clone")
check(lbknn.NearestNeighbors().get_params()["dtype"] is None, "default None")

# Refused: values the type cannot hold, a type that is none, queries that
# are not integers of the points' range.
for asked, bad, part in [("uint8", 2.5, "2.5"), ("uint8", 300, "300"), ("uint8", -1, "-1"),
                         ("int8", 200, "200"), ("float16", 1e6, "1000000.0")]:
    Xb = (Xu // 4).astype(np.float64)  # 0 .. 63: every type holds them
    Xb[3, 2] = bad
    expect_raises(ValueError, lambda: lbknn.NearestNeighbors(dtype=asked).fit(Xb),
                  f"X[3, 2] = {part}", f"dtype={asked!r} with {bad}")
expect_raises(ValueError, lambda: lbknn.NearestNeighbors(dtype="float64").fit(Xu), "dtype",
              "dtype='float64'")
expect_raises(ValueError, lambda: forced.kneighbors(Xu[:2] + 0.5), "integer queries",
              "float queries of a uint8 index")
finish()
