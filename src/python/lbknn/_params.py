"""The estimators' parameters as scikit-learn defines them
(sklearn.neighbors, 1.2 and later): their validation, with scikit-learn's
own constraints and InvalidParameterError, and what each means for lbknn's
library (its metric, engine and a CPU device's threads).

scikit-learn's metric is 'minkowski' with p = 2 by default, and p chooses
the metric: p = 1 is Manhattan, 2 Euclidean, inf Chebyshev. Those three are
the Minkowski metrics lbknn computes; any other p is refused, never
replaced by another metric."""

import math
import numbers
import warnings

import numpy as np

# lbknn's metrics (knn.metric) under scikit-learn's names and its own.
METRICS = {
    "euclidean": "l2", "l2": "l2",
    "manhattan": "l1", "cityblock": "l1", "l1": "l1",
    "chebyshev": "linf", "infinity": "linf", "linf": "linf",
    "cosine": "cosine",
    "ip": "ip",
}
_BY_P = {1: ("l1", "manhattan"), 2: ("l2", "euclidean"), math.inf: ("linf", "chebyshev")}
# scikit-learn's algorithm chooses how to search, never what is found: a
# ball tree is lbknn's k-d tree (brute force where the tree cannot serve).
ALGORITHMS = ("auto", "kd_tree", "ball_tree", "brute")
DEVICES = ("any", "cpu", "gpu")
# dtype: None or 'auto' keeps a uint8, int8 or float16 array's type (any
# other array is float32, as before); a name converts to that type.
DTYPES = ("auto", "float32", "uint8", "int8", "float16")
# What the k-d tree serves (knn.engine: kdtree): these metrics, k <= 1024.
_TREE_METRICS = ("l1", "l2", "linf")
_TREE_K_MAX = 1024
_THREADS_MAX = 4096  # device.threads' range


def constraints(sklearn_class, weights=None, **extra):
    """scikit-learn's _parameter_constraints of `sklearn_class` (None
    where scikit-learn has none: before 1.2), with lbknn's metric names
    added to its metric options, `weights` if given, and lbknn's own
    parameters `extra`."""
    theirs = getattr(sklearn_class, "_parameter_constraints", None)
    if theirs is None:
        return None
    from sklearn.utils._param_validation import StrOptions

    ours = dict(theirs)
    names = set(METRICS) | {"minkowski"}
    for c in theirs.get("metric", []):
        if isinstance(c, StrOptions):
            names |= set(c.options)
    ours["metric"] = [StrOptions(names), callable]
    if weights is not None:
        ours["weights"] = [StrOptions(set(weights)), callable, None]
    ours.update(extra)
    return ours


def lbknn_constraints(temperature=False):
    """The constraints of lbknn's own parameters: device, comm (checked at
    fit: mpi4py is optional) and the softmax temperature."""
    from sklearn.utils._param_validation import Interval, StrOptions

    extra = {"device": [StrOptions(set(DEVICES))], "comm": "no_validation",
             "dtype": [StrOptions(set(DTYPES)), None]}
    if temperature:
        extra["temperature"] = [Interval(numbers.Real, 0, None, closed="neither")]
    return extra


def validate(estimator):
    """scikit-learn's validation of the constructor's parameters
    (InvalidParameterError, a ValueError and TypeError, with its words),
    then what scikit-learn leaves to fit and lbknn refuses."""
    if estimator._parameter_constraints is not None:
        estimator._validate_params()
    elif estimator.algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}, got "
                         f"{estimator.algorithm!r}")
    if estimator.device not in DEVICES:
        raise ValueError(f"device must be one of {list(DEVICES)}, got {estimator.device!r}")
    if estimator.dtype is not None and estimator.dtype not in DTYPES:
        raise ValueError(f"dtype must be None or one of {list(DTYPES)}, got {estimator.dtype!r}")
    temperature = getattr(estimator, "temperature", 1.0)
    if (isinstance(temperature, bool) or not isinstance(temperature, numbers.Real)
            or not math.isfinite(temperature) or temperature <= 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    if estimator.comm is not None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise ValueError("comm is set, but mpi4py cannot be imported") from e
        if not isinstance(estimator.comm, MPI.Intracomm):
            raise ValueError(
                f"comm must be an mpi4py intracommunicator or None, got {type(estimator.comm)}")
    device_threads(estimator.n_jobs)


def resolve_metric(metric, p, metric_params):
    """(knn.metric, effective_metric_, effective_metric_params_) as
    scikit-learn's NeighborsBase._fit sets the last two: metric_params'
    p before p (with scikit-learn's SyntaxWarning when both are given);
    'minkowski' with p = 1, 2, inf becomes 'manhattan', 'euclidean',
    'chebyshev'. Anything lbknn does not compute is refused (ValueError)."""
    if callable(metric):
        raise ValueError(
            "metric: callable metrics are not supported by lbknn, which computes its metrics "
            "on the device: use one of 'minkowski' (p = 1, 2 or inf), 'euclidean', "
            "'manhattan', 'chebyshev', 'cosine' or 'ip'")
    if metric == "precomputed":
        raise ValueError(
            "metric='precomputed' is not supported by lbknn's estimators, which compute the "
            "distances themselves; pass the points (a precomputed graph from "
            "lbknn.KNeighborsTransformer feeds scikit-learn's estimators)")
    params = {} if metric_params is None else dict(metric_params)
    if metric_params is not None and "p" in metric_params and p is not None:
        warnings.warn("Parameter p is found in metric_params. The corresponding parameter "
                      "from __init__ is ignored.", SyntaxWarning, stacklevel=4)
    if metric == "minkowski":
        p = params.pop("p", p)
        w = params.pop("w", None)
        if w is not None:
            raise ValueError("metric='minkowski' with weights (metric_params['w']) is not "
                             "supported by lbknn")
        _refuse_extra_params(metric, params)
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or p not in _BY_P:
            semi = (" (for 0 < p < 1 it is not even a distance metric)"
                    if isinstance(p, numbers.Real) and 0 < p < 1 else "")
            raise ValueError(
                f"metric='minkowski' with p={p!r}: lbknn computes the Minkowski distance for "
                f"p = 1, 2 or inf only{semi}")
        name, effective = _BY_P[p]
        return name, effective, {}
    if metric not in METRICS:
        raise ValueError(
            f"metric {metric!r} is not supported by lbknn: use 'minkowski' (p = 1, 2 or inf), "
            f"one of {sorted(METRICS)}")
    _refuse_extra_params(metric, params)
    return METRICS[metric], metric, params


def _refuse_extra_params(metric, params):
    if params:
        raise ValueError(
            f"metric_params {sorted(params)} mean nothing to lbknn's {metric!r} (it takes only "
            "'p', with metric='minkowski')")


_RANGES = {"uint8": (0, 255), "int8": (-128, 127)}
_FLOAT16_MAX = 65504.0


def convert_points(X, dtype):
    """Validated numeric X at the type `dtype` names, refusing what that
    type cannot hold: for uint8 and int8 a value that is no integer of its
    range, for float16 one beyond its largest finite value (others round
    to the nearest float16, as NumPy's astype)."""
    target = np.dtype(dtype)
    if X.dtype == target:
        return X
    if dtype in _RANGES:
        lo, hi = _RANGES[dtype]
        if X.dtype.kind in "iub":
            bad = (X < lo) | (X > hi)
        else:
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(X) | (X != np.round(X)) | (X < lo) | (X > hi)
        what = f"an integer {lo} .. {hi}"
    elif dtype == "float16":
        with np.errstate(invalid="ignore", over="ignore"):
            wide = X.astype(np.float64)
            bad = ~np.isfinite(wide) | (np.abs(wide) > _FLOAT16_MAX)
        what = f"a finite number within +-{_FLOAT16_MAX:g}"
    else:
        return X.astype(target)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"dtype={dtype!r}: X{list(at)} = {X[at].item()!r} is not {what}, so X "
                         f"cannot be converted to {dtype}; give dtype='float32' or None")
    return X.astype(target)


def engine(algorithm, metric, k):
    """knn.engine for scikit-learn's algorithm, an index serving k."""
    if algorithm == "brute":
        return "brute"
    if algorithm == "kd_tree":
        return "kdtree"
    if algorithm == "ball_tree":
        return "kdtree" if metric in _TREE_METRICS and k <= _TREE_K_MAX else "brute"
    return "auto"


def device_threads(n_jobs):
    """device.threads for n_jobs: None is every compute unit of the device
    (lbknn's default, as before n_jobs existed); n > 0 at most n; -1 all,
    -2 all but one, ... (joblib's rule). GPUs ignore it."""
    if n_jobs is None:
        return 0
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise ValueError(f"n_jobs must be an int or None, got {n_jobs!r}")
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning (None or -1: every core, n: at most n)")
    if n_jobs == -1:
        return 0
    return max(-_THREADS_MAX, min(_THREADS_MAX, int(n_jobs)))
