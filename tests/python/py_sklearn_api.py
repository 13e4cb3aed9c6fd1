"""python.sklearn_api: lbknn's estimators are a drop-in for
sklearn.neighbors' (issue 37).

- Signatures: every parameter of scikit-learn's KNeighborsClassifier,
  KNeighborsRegressor, NearestNeighbors, KNeighborsTransformer,
  RadiusNeighborsClassifier and RadiusNeighborsRegressor, read
  from the installed scikit-learn's own classes (so a newer scikit-learn is
  checked too), is lbknn's, with the same default, kind (positional or
  keyword-only) and order; lbknn's own parameters come after them.
  get_params() of a default estimator equals scikit-learn's on the shared
  keys.
- Errors: scikit-learn's InvalidParameterError (a ValueError) for values
  its own constraints refuse; one ValueError naming the reason for what
  scikit-learn accepts and lbknn does not compute; scikit-learn's
  SyntaxWarning; NotFittedError where scikit-learn raises it.
- algorithm, leaf_size and n_jobs never change a result; n_jobs=1 limits
  a CPU device to one compute unit (device_ says so).
- fit accepts a fitted neighbours estimator (lbknn's or scikit-learn's) or
  a KDTree / BallTree as X, as scikit-learn does."""
import inspect
import os
import warnings

import numpy as np
from lbk_pytest import check, expect_raises, finish, rng

import scipy.sparse  # noqa: E402
import sklearn.neighbors as skn  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

import lbknn  # noqa: E402

PAIRS = [(lbknn.KNeighborsClassifier, skn.KNeighborsClassifier),
         (lbknn.KNeighborsRegressor, skn.KNeighborsRegressor),
         (lbknn.NearestNeighbors, skn.NearestNeighbors),
         (lbknn.KNeighborsTransformer, skn.KNeighborsTransformer),
         (lbknn.RadiusNeighborsClassifier, skn.RadiusNeighborsClassifier),
         (lbknn.RadiusNeighborsRegressor, skn.RadiusNeighborsRegressor)]
OWN = {"device", "comm", "temperature", "dtype"}

for ours, theirs in PAIRS:
    name = ours.__name__
    mine = inspect.signature(ours.__init__).parameters
    sk = inspect.signature(theirs.__init__).parameters
    shared = [p for p in sk if p != "self"]
    check(list(mine)[:len(sk)] == list(sk),
          f"{name}: parameters {list(mine)} do not start with scikit-learn's {list(sk)}")
    for p in shared:
        if check(p in mine, f"{name}: scikit-learn's parameter {p!r} is missing"):
            check(mine[p].default == sk[p].default and mine[p].kind == sk[p].kind,
                  f"{name}.{p}: default {mine[p].default!r} ({mine[p].kind}), scikit-learn's "
                  f"{sk[p].default!r} ({sk[p].kind})")
    extra = set(mine) - set(sk)
    check(extra <= OWN, f"{name}: unexpected parameters {sorted(extra - OWN)}")
    got, want = ours().get_params(), theirs().get_params()
    check({k: got[k] for k in want} == want,
          f"{name}: get_params() {got} differs from scikit-learn's {want}")
    print(f"{name}: {len(shared)} parameters as scikit-learn's, then {sorted(extra)}")

gen = rng(3708)
X = gen.normal(size=(80, 3))
y = gen.integers(0, 3, size=80)
Q = gen.normal(size=(20, 3))
C, R, N = lbknn.KNeighborsClassifier, lbknn.KNeighborsRegressor, lbknn.NearestNeighbors
T = lbknn.KNeighborsTransformer

# scikit-learn's own constraints and words.
for what, make in [("algorithm='kdtree'", lambda: C(algorithm="kdtree")),
                   ("leaf_size=0", lambda: C(leaf_size=0)),
                   ("p=0", lambda: C(p=0)),
                   ("metric='bogus'", lambda: C(metric="bogus")),
                   ("metric_params=[1]", lambda: C(metric_params=[1])),
                   ("n_jobs=1.5", lambda: C(n_jobs=1.5)),
                   ("weights='bogus'", lambda: C(weights="bogus")),
                   ("n_neighbors=0", lambda: C(n_neighbors=0)),
                   ("n_neighbors=2.5", lambda: C(n_neighbors=2.5)),
                   ("device='tpu'", lambda: C(device="tpu")),
                   ("temperature=0", lambda: C(temperature=0.0))]:
    e = expect_raises(ValueError, lambda: make().fit(X, y), what=what)
    check(type(e).__name__ == "InvalidParameterError",
          f"{what}: {type(e).__name__}, not scikit-learn's InvalidParameterError")
for what, make in [("radius=-1", lambda: lbknn.RadiusNeighborsClassifier(radius=-1.0)),
                   ("radius='x'", lambda: lbknn.RadiusNeighborsRegressor(radius="x")),
                   ("weights='softmax' (radius)",
                    lambda: lbknn.RadiusNeighborsClassifier(weights="softmax"))]:
    e = expect_raises(ValueError, lambda: make().fit(X, y), what=what)
    check(type(e).__name__ == "InvalidParameterError",
          f"{what}: {type(e).__name__}, not scikit-learn's InvalidParameterError")
e = expect_raises(ValueError, lambda: T(mode="bogus").fit(X), what="mode='bogus'")
check(type(e).__name__ == "InvalidParameterError", f"mode='bogus': {type(e).__name__}")

# Accepted by scikit-learn, refused by lbknn: one ValueError with the reason.
for what, make, words in [
        ("p=3", lambda: C(p=3), "p = 1, 2 or inf"),
        ("p=0.5", lambda: C(p=0.5), "not even a distance"),
        ("metric_params p=3", lambda: C(metric_params={"p": 3}, p=None), "p = 1, 2 or inf"),
        ("weighted minkowski", lambda: C(metric_params={"w": np.ones(3)}), "weights"),
        ("metric_params for euclidean", lambda: C(metric="euclidean", p=None,
                                                  metric_params={"p": 1}), "only 'p'"),
        ("metric='hamming' (boolean)", lambda: C(metric="hamming"), "not supported"),
        ("metric='jaccard' (boolean)", lambda: C(metric="jaccard"), "not supported"),
        ("metric='canberra'", lambda: C(metric="canberra"), "not supported"),
        ("metric='mahalanobis'", lambda: C(metric="mahalanobis"), "not supported"),
        ("metric='precomputed'", lambda: C(metric="precomputed"), "precomputed"),
        ("callable metric", lambda: C(metric=lambda a, b: 0.0), "callable"),
        ("n_jobs=0", lambda: C(n_jobs=0), "n_jobs")]:
    e = expect_raises(ValueError, lambda: make().fit(X, y), words, what=what)
    check(e is not None and "\n" not in str(e), f"{what}: not one line: {e}")
expect_raises(TypeError, lambda: N().fit(scipy.sparse.csr_matrix(X)), "sparse", "sparse input")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    both = C(p=2, metric_params={"p": 1}).fit(X, y)
check(any(w.category is SyntaxWarning and "metric_params" in str(w.message) for w in caught),
      f"p in metric_params beside p: no SyntaxWarning ({[str(w.message) for w in caught]})")
check(both.effective_metric_ == "manhattan", "metric_params' p wins over p")
with warnings.catch_warnings():
    warnings.simplefilter("error")
    C(metric_params={"p": 1}, p=None).fit(X, y)  # p=None: no warning, as scikit-learn

# NotFittedError where scikit-learn raises it.
for what, fn in [("predict", lambda: C().predict(Q)),
                 ("predict_proba", lambda: C().predict_proba(Q)),
                 ("regressor predict", lambda: R().predict(Q)),
                 ("kneighbors", lambda: N().kneighbors(Q)),
                 ("kneighbors_graph", lambda: N().kneighbors_graph(Q)),
                 ("transform", lambda: T().transform(Q)),
                 ("radius_neighbors", lambda: N().radius_neighbors(Q)),
                 ("radius predict", lambda: lbknn.RadiusNeighborsClassifier().predict(Q)),
                 ("radius regressor predict", lambda: lbknn.RadiusNeighborsRegressor().predict(Q)),
                 ("an unfitted estimator as X", lambda: C().fit(N(), y))]:
    expect_raises(NotFittedError, fn, what=f"{what} before fit")

# The algorithm, leaf_size and n_jobs choose how, never what.
reference = C(7, weights="distance").fit(X, y)
ref_d, ref_i = reference.kneighbors(Q)
ref_p = reference.predict_proba(Q)
for kw in [dict(algorithm="kd_tree"), dict(algorithm="ball_tree"), dict(algorithm="brute"),
           dict(leaf_size=1), dict(leaf_size=1000), dict(n_jobs=1), dict(n_jobs=-2),
           dict(n_jobs=64)]:
    other = C(7, weights="distance", **kw).fit(X, y)
    d, i = other.kneighbors(Q)
    check(np.array_equal(d, ref_d) and np.array_equal(i, ref_i)
          and np.array_equal(other.predict_proba(Q), ref_p), f"{kw}: results differ")
check(C(algorithm="ball_tree").fit(X, y)._fit_method == "kd_tree",
      "ball_tree on l2 runs lbknn's k-d tree")
check(C(algorithm="ball_tree", metric="cosine").fit(X, y)._fit_method == "brute",
      "ball_tree on cosine runs brute force")
one = C(n_jobs=1).fit(X, y).device_
every = C().fit(X, y).device_
print(f"n_jobs=1: {one}\nn_jobs=None: {every}")
check("compute unit" not in every, f"n_jobs=None limited the device: {every}")
if "pthread" in every.lower() or "cpu" in every.lower():
    if len(os.sched_getaffinity(0)) > 1:
        check(one.endswith(", 1 compute unit]"), f"n_jobs=1 on a CPU device: {one}")

# A fitted estimator or tree as X.
ours_nn = N(n_neighbors=3).fit(X)
for what, source in [("lbknn NearestNeighbors", ours_nn),
                     ("scikit-learn NearestNeighbors", skn.NearestNeighbors().fit(X)),
                     ("KDTree", skn.KDTree(X)), ("BallTree", skn.BallTree(X))]:
    c = C(7, weights="distance").fit(source, y)
    n = N(n_neighbors=4).fit(source)
    check(np.array_equal(c.predict_proba(Q), ref_p) and c.n_samples_fit_ == len(X),
          f"fit on a fitted {what}: predictions differ")
    check(np.array_equal(n.kneighbors(Q)[1], ref_i[:, :4]), f"fit on a fitted {what}: neighbours")
finish()
