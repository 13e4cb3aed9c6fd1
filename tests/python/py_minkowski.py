"""python.minkowski: scikit-learn's metric parameters mean what they mean
there (issue 37: `p` was ignored). For every p in {1, 2, inf} and each way
of spelling it (metric='minkowski' with p, metric_params={'p': ...}, and
the metric's own names), with uniform, 'distance' and callable weights, on
three data sets without distance ties (continuous draws): lbknn's classifier, regressor and
neighbours equal scikit-learn's (same neighbours, distances to float32's
rounding, same predictions, probabilities and regression values to float32
rounding of the distances), and effective_metric_ /
effective_metric_params_ are scikit-learn's. lbknn's algorithm rotates
over auto, kd_tree, ball_tree and brute; scikit-learn's is its own
choice. scikit-learn's own 6-point example first (the issue's numbers)."""
import itertools
import math
import warnings

import numpy as np
from lbk_pytest import check, finish, rng

from sklearn.datasets import make_classification  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier as SkC  # noqa: E402
from sklearn.neighbors import KNeighborsRegressor as SkR  # noqa: E402

import lbknn  # noqa: E402

# scikit-learn's documentation example, the case: Manhattan
# distances [2, 3] and probabilities [0, 0.4, 0.6] (Euclidean would give
# [2, 2.236] and [0, 0.472, 0.528]).
X6 = [[0, 2, 0], [0, 2, 1], [2, 0, 0], [2, 2, 0], [0, 0, 2], [0, 0, 1]]
y6 = [4, 4, 5, 5, 1, 1]
c6 = lbknn.KNeighborsClassifier(n_neighbors=2, p=1, weights="distance").fit(X6, y6)
d6, _ = c6.kneighbors([[2, 2, 2]])
check(np.array_equal(d6, [[2.0, 3.0]]), f"the 6-point example: distances {d6}, not [[2, 3]]")
check(np.allclose(c6.predict_proba([[2, 2, 2]]), [[0.0, 0.4, 0.6]], rtol=0, atol=1e-12),
      f"the 6-point example: probabilities {c6.predict_proba([[2, 2, 2]])}")
check(c6.effective_metric_ == "manhattan", f"effective_metric_ {c6.effective_metric_!r}")

gen = rng(3707)
K = 5


def blobs(n, dim, classes):
    centres = gen.normal(scale=3.0, size=(classes, dim))
    y = gen.integers(0, classes, size=n)
    return centres[y] + gen.normal(size=(n, dim)), y


# Continuous draws, so that no two distances tie: at an exact tie lbknn
# takes the smaller index and scikit-learn's order depends on its
# algorithm (python.sklearn_datasets). linf ties wherever two points share
# a coordinate, as in breast cancer's, so no real data set here.
datasets = {"blobs 2-d": blobs(300, 2, 4), "blobs 9-d": blobs(260, 9, 3),
            "make_classification 24-d": make_classification(
                n_samples=280, n_features=24, n_informative=10, n_classes=3,
                random_state=int(gen.integers(2**31)))}
# The ways to say each p: (metric, p, metric_params).
spellings = {
    1: [("minkowski", 1, None), ("minkowski", 2, {"p": 1}), ("manhattan", 2, None),
        ("cityblock", 3, None), ("l1", 2, None)],
    2: [("minkowski", 2, None), ("minkowski", None, {"p": 2}), ("euclidean", 1, None),
        ("l2", 2, None)],
    math.inf: [("minkowski", math.inf, None), ("minkowski", 1, {"p": math.inf}),
               ("chebyshev", 2, None), ("infinity", 2, None)],
}


def smooth(d):
    # A callable whose relative error is at most the distance's own (float32
    # distances in, unlike exp(-d^2), which turns d's rounding into d^2's).
    return 1.0 / (1.0 + d)


WEIGHTS = [("uniform", "uniform"), ("distance", "distance"), ("1/(1+d)", smooth)]
algorithms = itertools.cycle(["auto", "kd_tree", "ball_tree", "brute"])


def close_to_float32(ours, theirs):
    """lbknn's float32 distances against scikit-learn's float64 ones: equal
    to within a few float32 steps (the sums differ only in rounding)."""
    step = np.spacing(np.float32(np.max(np.abs(theirs)) + 1.0))
    return np.allclose(ours, theirs, rtol=8 * np.finfo(np.float32).eps, atol=4 * float(step))


cases = 0
for name, (X, y) in datasets.items():
    perm = gen.permutation(len(X))
    cut = int(0.75 * len(X))
    Xtr, ytr, Xte = X[perm[:cut]], y[perm[:cut]], X[perm[cut:]]
    target = Xtr[:, 0] - 2.0 * Xtr[:, -1]
    for p, ways in spellings.items():
        for metric, p_arg, params in ways:
            spelled = f"metric={metric!r} p={p_arg} metric_params={params}"
            for wname, weights in WEIGHTS:
                algorithm = next(algorithms)
                case = f"{name}, {spelled}, weights={wname}, algorithm={algorithm}"
                kw = dict(metric=metric, p=p_arg, metric_params=params, weights=weights)
                with warnings.catch_warnings():
                    # scikit-learn's SyntaxWarning for p in metric_params
                    # beside p (python.sklearn_api checks it is given).
                    warnings.simplefilter("ignore", SyntaxWarning)
                    theirs = SkC(K, **kw).fit(Xtr, ytr)
                    ours = lbknn.KNeighborsClassifier(K, algorithm=algorithm, **kw).fit(Xtr, ytr)
                    their_r = SkR(K, **kw).fit(Xtr, target)
                    our_r = lbknn.KNeighborsRegressor(K, algorithm=algorithm, **kw).fit(Xtr, target)
                cases += 1
                check(ours.effective_metric_ == theirs.effective_metric_
                      and ours.effective_metric_params_ == theirs.effective_metric_params_,
                      f"{case}: effective metric {ours.effective_metric_!r} "
                      f"{ours.effective_metric_params_}, scikit-learn's "
                      f"{theirs.effective_metric_!r} {theirs.effective_metric_params_}")
                od, oi = ours.kneighbors(Xte)
                td, ti = theirs.kneighbors(Xte)
                check(np.array_equal(oi, ti), f"{case}: neighbours differ from scikit-learn's "
                      f"in {np.sum(np.any(oi != ti, axis=1))} of {len(Xte)} queries")
                check(close_to_float32(od, td), f"{case}: distances differ by up to "
                      f"{np.max(np.abs(od - td)):.3g}")
                check(np.array_equal(ours.predict(Xte), theirs.predict(Xte)),
                      f"{case}: predict differs")
                check(np.allclose(ours.predict_proba(Xte), theirs.predict_proba(Xte),
                                  rtol=1e-5, atol=1e-6), f"{case}: predict_proba differs")
                check(np.allclose(our_r.predict(Xte), their_r.predict(Xte), rtol=1e-5,
                                  atol=1e-6), f"regressor, {case}: predict differs")
print(f"{cases} cases compared with scikit-learn")
finish()
