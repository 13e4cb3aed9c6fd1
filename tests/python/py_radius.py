"""python.radius: the radius doors against scikit-learn's own
NearestNeighbors, RadiusNeighborsClassifier and RadiusNeighborsRegressor
(issue 40), on a synthetic set (no ties), iris and digits:

- radius_neighbors (X given, X=None: the point itself left out,
  return_distance, sort_results, one radius per query) and
  radius_neighbors_graph (both modes) for l2, l1, linf and cosine on both
  engines: the same ids, distances equal to float32 rounding. lbknn
  computes in float32, scikit-learn in float64, so a point whose distance
  lies within float32 rounding of r may fall on either side: such points
  are counted, printed and allowed, nothing else;
- the classifier's predict and predict_proba (uniform, distance and
  callable weights), outlier_label None (scikit-learn's ValueError, word for
  word), 'most_frequent', a class and a label that is no class (its
  warning); the regressor's predict, NaN and scikit-learn's warning where a
  query has no neighbour;
- pickling, and the errors of bad radii."""
import pickle
import warnings

import numpy as np
from lbk_pytest import check, expect_raises, finish, rng

import sklearn.neighbors as skn  # noqa: E402
from sklearn.datasets import load_digits, load_iris  # noqa: E402

import lbknn  # noqa: E402

gen = rng(4040)


def near_boundary(d, r):
    """Distances within float32 rounding of the radius (relative 1e-5)."""
    return np.abs(d - r) <= 1e-5 * max(abs(r), 1e-3)


def same_lists(case, ours, theirs, r):
    """ours, theirs: (distances, ids) object arrays; theirs sorted. The
    same ids in the same order but for points at r within rounding."""
    od, oi = ours
    td, ti = theirs
    check(len(oi) == len(ti), f"{case}: {len(oi)} queries, scikit-learn {len(ti)}")
    loose = 0
    for q in range(len(ti)):
        radius = r[q] if np.ndim(r) else r
        keep = ~near_boundary(td[q], radius)
        mine = ~near_boundary(od[q], radius)
        loose += int(np.sum(~keep)) + int(np.sum(~mine))
        if not check(np.array_equal(oi[q][mine], ti[q][keep]),
                     f"{case}: query {q}: ids {oi[q][:8]}... != scikit-learn's {ti[q][:8]}..."):
            return
        check(oi[q].dtype == np.int64 and od[q].dtype == np.float64,
              f"{case}: dtypes {oi[q].dtype}, {od[q].dtype}")
        check(np.allclose(od[q][mine], td[q][keep], rtol=1e-5, atol=1e-6),
              f"{case}: query {q}: distances differ")
        check(np.all(np.diff(od[q]) >= 0), f"{case}: query {q}: not sorted")
    if loose:
        print(f"{case}: {loose} point(s) within rounding of r, allowed either side")


# ---- radius_neighbors and its graph on a synthetic set ----
X = gen.normal(size=(400, 4))
Q = gen.normal(size=(60, 4))
RADII = {"euclidean": 1.1, "manhattan": 1.9, "chebyshev": 0.8, "cosine": 0.15}
for metric, r in RADII.items():
    ref = skn.NearestNeighbors(radius=r, metric=metric, algorithm="brute").fit(X)
    theirs = ref.radius_neighbors(Q, sort_results=True)
    theirs_self = ref.radius_neighbors(sort_results=True)
    per_query = r * (0.5 + gen.random(len(Q)))
    theirs_each = [ref.radius_neighbors(Q[q:q + 1], radius=per_query[q], sort_results=True)
                   for q in range(len(Q))]
    theirs_each = (np.array([t[0][0] for t in theirs_each] + [None], dtype=object)[:-1],
                   np.array([t[1][0] for t in theirs_each] + [None], dtype=object)[:-1])
    for algorithm in ("kd_tree", "brute"):
        if metric == "cosine" and algorithm == "kd_tree":
            continue
        case = f"{metric} {algorithm}"
        nn = lbknn.NearestNeighbors(radius=r, metric=metric, algorithm=algorithm).fit(X)
        ours = nn.radius_neighbors(Q)
        check(isinstance(ours, tuple) and ours[0].dtype == object and ours[1].dtype == object
              and ours[1].shape == (len(Q),), f"{case}: not object arrays")
        same_lists(case, ours, theirs, r)
        same_lists(f"{case} X=None", nn.radius_neighbors(), theirs_self, r)
        same_lists(f"{case} radii", nn.radius_neighbors(Q, radius=per_query), theirs_each,
                   per_query)
        sorted_ = nn.radius_neighbors(Q, sort_results=True)
        check(all(np.array_equal(a, b) for a, b in zip(sorted_[1], ours[1])),
              f"{case}: sort_results=True changed the order")
        ids_only = nn.radius_neighbors(Q, return_distance=False)
        check(ids_only.dtype == object and all(np.array_equal(a, b)
                                               for a, b in zip(ids_only, ours[1])),
              f"{case}: return_distance=False")
        for mode in ("connectivity", "distance"):
            g = nn.radius_neighbors_graph(Q, mode=mode)
            want = ref.radius_neighbors_graph(Q, mode=mode, sort_results=True)
            check(g.format == "csr" and g.shape == want.shape, f"{case} {mode}: {g.shape}")
            diff = abs(g - want)
            loose = sum(int(np.sum(near_boundary(d, r))) for d in theirs[0])
            far_off = int(np.sum(diff.data > 1e-5))
            check(far_off <= loose, f"{case} graph {mode}: {far_off} entries differ "
                  f"({loose} at r)")
            check(np.array_equal(g.indptr, np.cumsum([0] + [len(i) for i in ours[1]])),
                  f"{case} graph {mode}: rows")
        gs = nn.radius_neighbors_graph(mode="distance")
        check(gs.shape == (len(X), len(X)) and gs.diagonal().sum() == 0
              and not any(q in ours_q for q, ours_q in enumerate(nn.radius_neighbors()[1])),
              f"{case}: X=None graph holds a point itself")

nn = lbknn.NearestNeighbors(radius=1.0).fit(X)
expect_raises(ValueError, lambda: nn.radius_neighbors(Q, return_distance=False,
                                                      sort_results=True),
              "return_distance must be True if sort_results is True", "sort without distance")
expect_raises(ValueError, lambda: nn.radius_neighbors_graph(Q, mode="bogus"), "Unsupported mode",
              "mode='bogus'")
for bad in (-0.5, float("nan"), float("inf")):
    e = expect_raises(ValueError, lambda: nn.radius_neighbors(Q, radius=bad), "radius",
                      f"radius={bad}")
    check(e is None or "\n" not in str(e), f"radius={bad}: not one line")
expect_raises(ValueError, lambda: nn.radius_neighbors(Q, radius=np.ones(3)), "radius",
              "radii of the wrong length")
for bad, says in ((-1e-50, "negative"), (1e39, "not finite as a float32")):
    expect_raises(ValueError, lambda: nn.radius_neighbors(Q, radius=bad), says, f"radius={bad}")
    expect_raises(ValueError, lambda: nn.radius_neighbors(Q, radius=np.full(len(Q), bad)), says,
                  f"radii of {bad}")
# A float64 radius is that number's ball, not its nearest float32's: a point
# at float32 0.1 (0.10000000149) lies beyond radius 0.1, as scikit-learn
# finds in float64 (its k-d tree: its brute force compares float32 distances
# with the radius as a float32); per-query radii and the estimators the same.
P = np.array([[0.1, 0, 0], [0.05, 0, 0], [0.2, 0, 0], [0, -0.1, 0]], dtype=np.float32)
O = np.zeros((2, 3), dtype=np.float32)
for metric in ("euclidean", "manhattan", "chebyshev"):
    theirs = skn.NearestNeighbors(radius=0.1, metric=metric, algorithm="kd_tree").fit(P).radius_neighbors(O)[1]
    ours_nn = lbknn.NearestNeighbors(radius=0.1, metric=metric).fit(P)
    for how, got in (("radius", ours_nn.radius_neighbors(O)[1]),
                     ("radii", ours_nn.radius_neighbors(O, radius=np.full(2, 0.1))[1])):
        check(all(sorted(g.tolist()) == sorted(t.tolist()) == [1] for g, t in zip(got, theirs)),
              f"radius 0.1, {metric}, {how}: {got.tolist()} where scikit-learn finds "
              f"{theirs.tolist()}")
    y = np.array([0, 1, 0, 0])
    c = lbknn.RadiusNeighborsClassifier(radius=0.1, metric=metric).fit(P, y).predict(O)
    check(np.array_equal(c, [1, 1]), f"radius 0.1, {metric}: the classifier votes {c}")
    v = lbknn.RadiusNeighborsRegressor(radius=0.1, metric=metric).fit(P, y * 5.0).predict(O)
    check(np.array_equal(v, [5.0, 5.0]), f"radius 0.1, {metric}: the regressor gives {v}")
# ip: dot >= r toward the inside too: float32 0.1's dot with (1, 0, 0) is
# above 0.1 (in), float32 0.09999999's below (out).
below = np.nextafter(np.float32(0.1), np.float32(0))
got = lbknn.NearestNeighbors(radius=0.1, metric="ip").fit(
    np.array([[0.1, 0, 0], [below, 0, 0]], dtype=np.float32)).radius_neighbors(
    np.array([[1, 0, 0]], dtype=np.float32))[1][0]
check(got.tolist() == [0], f"ip radius 0.1: {got.tolist()}, want [0]")
empty = nn.radius_neighbors(Q, radius=0.0)
check(all(len(i) == 0 for i in empty[1]), "radius 0: neighbours found")
# ip: the points whose dot product is >= r, the largest first.
ip = lbknn.NearestNeighbors(radius=1.5, metric="ip").fit(X)
dots = Q @ X.T
d_ip, i_ip = ip.radius_neighbors(Q)
for q in range(len(Q)):
    want = np.flatnonzero(dots[q] >= 1.5 + 1e-4)
    maybe = np.flatnonzero(np.abs(dots[q] - 1.5) <= 1e-4)
    got = set(i_ip[q].tolist())
    check(set(want.tolist()) <= got <= set(want.tolist()) | set(maybe.tolist()),
          f"ip: query {q}: ids")
    check(np.all(np.diff(d_ip[q]) <= 0), f"ip: query {q}: not largest first")


# ---- the classifier and regressor against scikit-learn's ----
def inverse(d):
    return 1.0 / (1.0 + d)


iris_X, iris_y = load_iris(return_X_y=True)
digits_X, digits_y = load_digits(return_X_y=True)
t = X[:, 0] - 2 * X[:, 1] + gen.normal(scale=0.1, size=len(X))
y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 2] > 0.5)
# Radii no distance lies near: iris' squared distances are multiples of
# 0.01, digits' integers.
SETS = [("synthetic", X, y, Q, 1.1, "euclidean"),
        ("iris", iris_X[::2], iris_y[::2], iris_X[1::2], 0.55, "euclidean"),
        ("iris l1", iris_X[::2], iris_y[::2], iris_X[1::2], 0.75, "manhattan"),
        ("digits", digits_X[::3], digits_y[::3], digits_X[1::6], 30.5, "euclidean")]
for name, A, b, B, r, metric in SETS:
    for weights in ("uniform", "distance", inverse):
        wname = getattr(weights, "__name__", weights)
        case = f"{name} {wname}"
        mk = dict(radius=r, weights=weights, metric=metric, outlier_label="most_frequent")
        sk = skn.RadiusNeighborsClassifier(**mk).fit(A, b)
        ours = lbknn.RadiusNeighborsClassifier(**mk).fit(A, b)
        check(ours.outlier_label_ == sk.outlier_label_,
              f"{case}: outlier_label_ {ours.outlier_label_} != {sk.outlier_label_}")
        p, want = ours.predict(B), sk.predict(B)
        check(np.array_equal(p, want), f"{case}: {np.sum(p != want)} predictions differ")
        pp, want_pp = ours.predict_proba(B), sk.predict_proba(B)
        check(pp.shape == want_pp.shape and np.allclose(pp, want_pp, atol=1e-6),
              f"{case}: probabilities differ by {np.abs(pp - want_pp).max()}")
        if b.dtype.kind in "iu":
            tr = b.astype(float) * 1.5 - 2
            reg = dict(radius=r, weights=weights, metric=metric)
            v = lbknn.RadiusNeighborsRegressor(**reg).fit(A, tr)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got, want_v = v.predict(B), skn.RadiusNeighborsRegressor(**reg).fit(A, tr).predict(B)
            check(np.array_equal(np.isnan(got), np.isnan(want_v))
                  and np.allclose(got[~np.isnan(got)], want_v[~np.isnan(want_v)],
                                 rtol=1e-6, atol=1e-6),
                  f"{case}: regression differs")
        print(f"{case}: {len(B)} queries as scikit-learn's", flush=True)

# Outliers: a far query among near ones.
far = np.vstack([Q[:5], [[40.0, 40.0, 40.0, 40.0]], Q[5:9]])
for label in (None, 2, 7):
    sk = skn.RadiusNeighborsClassifier(radius=1.1, outlier_label=label).fit(X, y)
    ours = lbknn.RadiusNeighborsClassifier(radius=1.1, outlier_label=label).fit(X, y)
    if label is None:
        try:
            sk.predict(far)
        except ValueError as e:
            expect_raises(ValueError, lambda: ours.predict(far), str(e), "no outlier_label")
            expect_raises(ValueError, lambda: ours.predict_proba(far), str(e),
                          "no outlier_label (proba)")
        continue
    with warnings.catch_warnings(record=True) as mine_w:
        warnings.simplefilter("always")
        p, pp = ours.predict(far), ours.predict_proba(far)
    with warnings.catch_warnings(record=True) as their_w:
        warnings.simplefilter("always")
        want, want_pp = sk.predict(far), sk.predict_proba(far)
    check(np.array_equal(p, want) and p[5] == label, f"outlier_label={label}: predict {p}")
    check(np.allclose(pp, want_pp, atol=1e-6), f"outlier_label={label}: probabilities {pp[5]}")
    check(sorted({str(w.message) for w in mine_w}) == sorted({str(w.message) for w in their_w}),
          f"outlier_label={label}: warnings {[str(w.message) for w in mine_w]} != "
          f"{[str(w.message) for w in their_w]}")
expect_raises(TypeError, lambda: lbknn.RadiusNeighborsClassifier(outlier_label="x").fit(X, y),
              "dtype", "outlier_label of another dtype")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    v = lbknn.RadiusNeighborsRegressor(radius=1.1).fit(X, t).predict(far)
check(np.isnan(v[5]) and not np.isnan(np.delete(v, 5)).any(), f"regressor: NaN where {v}")
check(any("no neighbors within specified radius" in str(w.message) for w in caught),
      "regressor: no warning for a query without neighbours")

# Pickled, the same answers.
for est in (lbknn.RadiusNeighborsClassifier(radius=1.1, outlier_label=0).fit(X, y),
            lbknn.RadiusNeighborsRegressor(radius=1.1, weights="distance").fit(X, t),
            lbknn.NearestNeighbors(radius=0.9).fit(X)):
    back = pickle.loads(pickle.dumps(est))
    if hasattr(est, "predict"):
        check(np.array_equal(back.predict(far), est.predict(far), equal_nan=True),
              f"{est!r}: after pickling")
    else:
        check(all(np.array_equal(a, b) for a, b in zip(back.radius_neighbors(Q)[1],
                                                        est.radius_neighbors(Q)[1])),
              f"{est!r}: after pickling")
finish()
