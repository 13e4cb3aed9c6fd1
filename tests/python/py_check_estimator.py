"""python.check_estimator.*: scikit-learn's own estimator checks
(sklearn.utils.estimator_checks.check_estimator), every one of them run,
every failure printed, for the estimator with its defaults and with other
engines, metrics and weights.

    py_check_estimator.py classifier|regressor|nearest_neighbors|transformer|
                          radius_classifier|radius_regressor

A check that raises SkipTest is listed as skipped: scikit-learn's own
(pandas is not installed) or the estimator's _xfail_checks tag (each
one's reason is in docs/python.md)."""
import sys
import traceback
import warnings

from lbk_pytest import check, finish

from sklearn.exceptions import SkipTestWarning  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import lbknn  # noqa: E402

def inverse(d):
    # Callable weights (a module's function: the pickling checks pickle it).
    return 1.0 / (1.0 + d)


# The defaults, then other algorithms, metrics (p included) and weights.
C, R, N = lbknn.KNeighborsClassifier, lbknn.KNeighborsRegressor, lbknn.NearestNeighbors
T = lbknn.KNeighborsTransformer
RC, RR = lbknn.RadiusNeighborsClassifier, lbknn.RadiusNeighborsRegressor
estimators = {
    "classifier": [C(), C(3, weights="distance", p=1, algorithm="kd_tree"),
                   C(weights="softmax", metric="cosine", temperature=0.1),
                   C(metric="chebyshev", algorithm="brute"),
                   C(weights=inverse, metric_params={"p": float("inf")}, p=None,
                     algorithm="ball_tree", n_jobs=1)],
    "regressor": [R(), R(weights="distance", metric="cosine"),
                  R(metric="minkowski", p=1, algorithm="kd_tree"), R(weights=inverse)],
    "nearest_neighbors": [N(), N(metric="ip"), N(n_neighbors=1, metric="l1", algorithm="kd_tree")],
    "transformer": [T(), T(mode="connectivity", n_neighbors=3, p=1, algorithm="brute")],
    "radius_classifier": [RC(), RC(2.5, weights="distance", p=1, algorithm="kd_tree",
                                   outlier_label="most_frequent"),
                          RC(weights=inverse, metric="chebyshev", algorithm="brute")],
    "radius_regressor": [RR(), RR(2.0, weights="distance", metric="manhattan"),
                         RR(weights=inverse, algorithm="kd_tree")],
}
for estimator in estimators[sys.argv[1]]:
    skipped = []
    passed = 0
    for est, chk in check_estimator(estimator, generate_only=True):
        name = getattr(chk, "func", chk).__name__
        kwargs = getattr(chk, "keywords", {}) or {}
        label = f"{estimator!r}: " + name + (f"({kwargs})" if kwargs else "")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SkipTestWarning)
                chk(est)
            passed += 1
        except Exception as e:  # noqa: BLE001 - SkipTest is unittest's, whatever the runner
            if type(e).__name__ == "SkipTest":
                skipped.append(f"{name}: {e}")
                continue
            traceback.print_exc()
            check(False, f"{label}: {type(e).__name__}: {e}")
    print(f"{estimator!r}: {passed} checks passed, {len(skipped)} skipped")
    for text in skipped:
        print(f"  skipped {text}")
    check(passed > 20, f"{estimator!r}: only {passed} checks ran")
finish()
