"""python.check_estimator.*: scikit-learn's own estimator checks
(sklearn.utils.estimator_checks.check_estimator), every one of them run,
every failure printed.

    py_check_estimator.py classifier|regressor|nearest_neighbors

A check that raises SkipTest is listed as skipped: scikit-learn's own
(pandas is not installed) or the estimator's _xfail_checks tag (each
one's reason is in the README's Python section)."""
import sys
import traceback
import warnings

from lbk_pytest import check, finish

from sklearn.exceptions import SkipTestWarning  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import lbknn  # noqa: E402

estimators = {
    "classifier": lbknn.KNeighborsClassifier,
    "regressor": lbknn.KNeighborsRegressor,
    "nearest_neighbors": lbknn.NearestNeighbors,
}
estimator = estimators[sys.argv[1]]()
skipped = []
passed = 0
for est, chk in check_estimator(estimator, generate_only=True):
    name = getattr(chk, "func", chk).__name__
    kwargs = getattr(chk, "keywords", {}) or {}
    label = name + (f"({kwargs})" if kwargs else "")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkipTestWarning)
            chk(est)
        passed += 1
    except Exception as e:  # noqa: BLE001 - SkipTest is unittest's, whatever the runner
        if type(e).__name__ == "SkipTest":
            skipped.append(f"{label}: {e}")
            continue
        traceback.print_exc()
        check(False, f"{label}: {type(e).__name__}: {e}")
print(f"{type(estimator).__name__}: {passed} checks passed, {len(skipped)} skipped")
for s in skipped:
    print(f"  skipped {s}")
check(passed > 20, f"only {passed} checks ran")
finish()
