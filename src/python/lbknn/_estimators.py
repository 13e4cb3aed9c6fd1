"""scikit-learn estimators over liblbknn: KNeighborsClassifier,
KNeighborsRegressor and NearestNeighbors, with scikit-learn's names and
semantics (sklearn.neighbors), exact results computed by lbknn on an
OpenCL device, and optionally over the ranks of an mpi4py communicator.
"""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import _lib

# scikit-learn's metric names (and lbknn's own) -> knn.metric, and the
# name effective_metric_ reports.
_METRICS = {
    "euclidean": "l2", "l2": "l2",
    "manhattan": "l1", "cityblock": "l1", "l1": "l1",
    "chebyshev": "linf", "infinity": "linf", "linf": "linf",
    "cosine": "cosine",
    "ip": "ip",
}
_EFFECTIVE = {"l2": "euclidean", "l1": "manhattan", "linf": "chebyshev", "cosine": "cosine",
              "ip": "ip"}
_ALGORITHMS = {"auto": "auto", "kd_tree": "kdtree", "brute": "brute"}
_FIT_METHOD = {"kdtree": "kd_tree", "brute": "brute"}
_DEVICES = ("any", "cpu", "gpu")


class _Native:
    """The lbknn index of a fitted estimator, built on demand. One object
    per fit, kept while it is rebuilt (for a larger k, or after
    unpickling), so that predicting leaves the estimator's __dict__ as it
    was (scikit-learn's check_dict_unchanged)."""

    __slots__ = ("index",)

    def __init__(self, index=None):
        self.index = index


def _check_n_neighbors(value, name="n_neighbors"):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} does not take {type(value)} value, enter integer value")
    if value <= 0:
        raise ValueError(f"Expected {name} > 0. Got {value}")
    return int(value)


def _comm_size(comm):
    return 1 if comm is None else comm.Get_size()


def _agreed(comm, fn):
    """fn()'s result, where under MPI every rank learns whether fn failed on
    any rank and then raises too (the failing rank its own exception, the
    others one that names it), instead of waiting in the next collective
    call for a rank that has left. Input is checked per rank (each has its
    own shard), so such failures need not be the same on every rank."""
    if comm is None or comm.Get_size() == 1:
        return fn()
    try:
        result, error = fn(), None
    except Exception as e:  # noqa: BLE001 - re-raised below, after the agreement
        result, error = None, e
    kind = (None if error is None else ValueError if isinstance(error, ValueError)
            else TypeError if isinstance(error, TypeError) else RuntimeError)
    failed = comm.allgather(None if error is None else (kind, type(error).__name__, str(error)))
    if error is not None:
        raise error
    for rank, failure in enumerate(failed):
        if failure is not None:
            kind, name, message = failure
            raise kind(f"rank {rank} failed: {name}: {message}")
    return result


class _LbknnBase(BaseEstimator):
    """Fitting, the index and kneighbors, shared by the three estimators.
    Subclasses set _supervised ('labels', 'targets' or None)."""

    _supervised = None

    # ---- parameters ----

    def _metric(self):
        if not isinstance(self.metric, str):
            raise ValueError(
                f"metric must be one of {sorted(_METRICS) + ['minkowski']}, got {self.metric!r}"
                " (callable metrics are not supported)")
        name = self.metric.lower()
        if name == "minkowski":
            by_p = {1: "l1", 2: "l2", math.inf: "linf"}
            p = self.p
            if isinstance(p, bool) or not isinstance(p, numbers.Real) or p not in by_p:
                raise ValueError(f"metric='minkowski' supports p = 1, 2 or inf, got p={p!r}")
            return by_p[p]
        if name not in _METRICS:
            raise ValueError(
                f"metric {self.metric!r} is not supported by lbknn; use one of "
                f"{sorted(_METRICS) + ['minkowski']}")
        return _METRICS[name]

    def _engine(self):
        if self.algorithm not in _ALGORITHMS:
            raise ValueError(
                f"algorithm {self.algorithm!r} is not available in lbknn; use 'auto', "
                "'kd_tree' or 'brute'")
        return _ALGORITHMS[self.algorithm]

    def _check_common_params(self):
        _check_n_neighbors(self.n_neighbors)
        if self.device not in _DEVICES:
            raise ValueError(f"device must be one of {list(_DEVICES)}, got {self.device!r}")
        if self.comm is not None:
            try:
                from mpi4py import MPI
            except ImportError as e:
                raise ValueError("comm is set, but mpi4py cannot be imported") from e
            if not isinstance(self.comm, MPI.Intracomm):
                raise ValueError(
                    f"comm must be an mpi4py intracommunicator or None, got {type(self.comm)}")
        return self._metric(), self._engine()

    def _check_weights(self, allowed):
        if self.weights not in allowed:
            raise ValueError(
                f"weights must be one of {list(allowed)}, got {self.weights!r}"
                " (callable weights are not supported)")
        if self.weights == "softmax":
            t = self.temperature
            if (isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t)
                    or t <= 0):
                raise ValueError(f"temperature must be a finite number > 0, got {t!r}")
        return self.weights

    # ---- fitting ----

    def _validate_queries(self, X):
        # float32, C order: what the library reads. check_array refuses
        # sparse, complex, 1-D, empty and non-finite input (also values
        # that overflow float32) with scikit-learn's own messages, and a
        # number of features other than fit's.
        # (Values beyond float32's range become inf, refused below; not
        # also a RuntimeWarning.)
        def validate():
            with np.errstate(over="ignore", invalid="ignore"):
                return self._validate_data(X, reset=False, accept_sparse=False,
                                           dtype=np.float32, order="C",
                                           force_all_finite=self._check_finite())

        return _agreed(self.comm, validate)

    def _check_finite(self):
        # One process: the library checks every value itself (one pass in C,
        # its message names the row and column); scanning here as well cost
        # Fashion-MNIST's fit and predict about 2 % (bench/python_peers.py).
        # Under MPI the check stays here, where _agreed turns a bad shard
        # into the same ValueError on every rank.
        return _comm_size(self.comm) > 1

    def _validate_fit(self, X, y):
        # A copy: the rows are queried again by kneighbors(X=None) and refit
        # from after unpickling, whatever the caller does with X meanwhile
        # (the library's index holds a copy of its own: the fit is a
        # snapshot). Under MPI a shard may be empty.
        min_samples = 1 if _comm_size(self.comm) == 1 else 0
        finite = self._check_finite()
        with np.errstate(over="ignore", invalid="ignore"):
            if self._supervised is None:
                X = self._validate_data(X, accept_sparse=False, dtype=np.float32, order="C",
                                        copy=True, ensure_min_samples=min_samples,
                                        force_all_finite=finite)
            else:
                X, y = self._validate_data(
                    X, y, accept_sparse=False, dtype=np.float32, order="C", copy=True,
                    ensure_min_samples=min_samples, y_numeric=self._supervised == "targets",
                    force_all_finite=finite)
        if self._supervised == "labels":
            check_classification_targets(y)
        return X, y

    def _fit(self, X, y):
        metric, engine = self._check_common_params()
        comm = self.comm
        X, y = _agreed(comm, lambda: self._validate_fit(X, y))
        n_local = X.shape[0]
        n_total = n_local if comm is None else comm.allreduce(n_local)
        if n_total == 0:
            raise ValueError("Found array with 0 sample(s) on every rank while a minimum of 1 "
                             "is required.")
        if self._supervised == "labels":
            classes = np.unique(y)
            if comm is not None:
                # Every rank's classes: a class may be missing from a shard
                # (an empty shard's are left out, whose dtype is float's).
                every = [c for c in comm.allgather(classes) if len(c)]
                classes = np.unique(np.concatenate(every))
            self.classes_ = classes
            labels = np.searchsorted(classes, y).astype(np.int32)
            self._y = labels
            self.outputs_2d_ = False
        elif self._supervised == "targets":
            self._y = np.asarray(y, dtype=np.float64)
        self._fit_X = X
        self.n_samples_fit_ = int(n_total)
        self.effective_metric_ = _EFFECTIVE[metric]
        self.effective_metric_params_ = {}
        self._lbknn_metric = metric
        self._lbknn_engine = engine
        self._lbknn = _Native()
        with _lib.lock:
            index = self._index(min(self.n_neighbors, n_total))
        self._fit_method = _FIT_METHOD.get(index.engine, index.engine)
        self.engine_ = index.engine
        self.device_ = index.ctx.device
        return self

    def _index(self, k):
        """The index, (re)built if it serves fewer than k neighbours or
        was dropped by pickling. Collective under MPI, as every call that
        reaches it. The caller holds _lib.lock until it has used the index,
        so that another thread's rebuild cannot free it meanwhile."""
        native = self._lbknn
        if native.index is None or native.index.k < k:
            if native.index is not None:
                native.index.destroy()
                native.index = None
            ctx = _lib.context(self.device, self.comm)
            labels = self._y if self._supervised == "labels" else None
            targets = self._y if self._supervised == "targets" else None
            native.index = _lib.Index(ctx, self._fit_X, k, self._lbknn_metric,
                                      self._lbknn_engine, labels=labels, targets=targets)
        return native.index

    def _query_k(self, n_neighbors):
        if n_neighbors > self.n_samples_fit_:
            raise ValueError(
                f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {n_neighbors}, "
                f"n_samples_fit = {self.n_samples_fit_}")
        return n_neighbors

    def _all_fit_X(self):
        # Every rank's rows in rank order: the global ids' order.
        comm = self.comm
        if comm is None or comm.Get_size() == 1:
            return self._fit_X
        from mpi4py import MPI

        local = self._fit_X
        counts = np.array(comm.allgather(local.size), dtype=np.int64)
        rows = counts // max(local.shape[1], 1)
        out = np.empty((int(rows.sum()), local.shape[1]), dtype=np.float32)
        comm.Allgatherv(local, [out, counts, MPI.FLOAT])
        return out

    # ---- queries ----

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """The n_neighbors nearest fitted points of each row of X, as
        sklearn.neighbors' kneighbors: (distances, indices) sorted by
        distance, ties by index. With X=None, the neighbours of every fitted
        point other than itself. Distances are float64 (lbknn computes them
        in float32); indices int64, global row numbers over the ranks under
        MPI. Under MPI every rank passes the same X and gets every row."""
        check_is_fitted(self)
        k = self.n_neighbors if n_neighbors is None else _check_n_neighbors(n_neighbors)
        query_is_train = X is None
        if query_is_train:
            X = self._all_fit_X()
            # Itself, dropped below, plus k others.
            k += 1
        else:
            X = self._validate_queries(X)
        k = self._query_k(k)
        with _lib.lock:
            ids, dist = self._index(k).search(X, k, distances=return_distance)
        if query_is_train:
            n = X.shape[0]
            keep = ids != np.arange(n)[:, None]
            # More duplicates of a point than k: it may not be in its own
            # list, and the first entry is dropped instead (as scikit-learn).
            absent = np.all(keep, axis=1)
            keep[absent, 0] = False
            ids = ids[keep].reshape(n, k - 1)
            if return_distance:
                dist = dist[keep].reshape(n, k - 1)
        if not return_distance:
            return ids
        return dist.astype(np.float64), ids

    def kneighbors_graph(self, X=None, n_neighbors=None, mode="connectivity"):
        """The k-neighbours graph as a CSR matrix (n_queries x
        n_samples_fit_), as sklearn.neighbors' kneighbors_graph."""
        from scipy.sparse import csr_matrix

        if n_neighbors is None:
            n_neighbors = self.n_neighbors
        if mode == "connectivity":
            ind = self.kneighbors(X, n_neighbors, return_distance=False)
            data = np.ones(ind.size)
        elif mode == "distance":
            dist, ind = self.kneighbors(X, n_neighbors, return_distance=True)
            data = dist.ravel()
        else:
            raise ValueError(
                f'Unsupported mode, must be one of "connectivity", or "distance" but got '
                f'"{mode}" instead')
        n_queries, k = ind.shape
        indptr = np.arange(0, n_queries * k + 1, k)
        return csr_matrix((data, ind.ravel(), indptr), shape=(n_queries, self.n_samples_fit_))

    # ---- pickling ----

    def __getstate__(self):
        if self.comm is not None:
            raise TypeError(
                f"cannot pickle a {type(self).__name__} with comm set: mpi4py communicators "
                "cannot be pickled (and each rank holds only its own shard)")
        state = dict(super().__getstate__())
        # The library's handles do not survive a process; the fitted
        # arrays do, and the index is rebuilt from them on first use.
        state.pop("_lbknn", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_fit_X" in state:
            self._lbknn = _Native()


class KNeighborsClassifier(ClassifierMixin, _LbknnBase):
    """Classifier implementing the k-nearest neighbours vote, on lbknn.

    Parameters
    ----------
    n_neighbors : int, default=5
        Number of neighbours.
    weights : {'uniform', 'distance', 'softmax'}, default='uniform'
        'uniform': a majority, ties to the smallest class; 'distance':
        1/d, and where some neighbour is at distance 0 only those vote;
        'softmax': exp(similarity / temperature), with the similarity the
        dot product for 'ip', cos for 'cosine', minus the distance else.
    algorithm : {'auto', 'kd_tree', 'brute'}, default='auto'
        lbknn's engine: the left-balanced k-d tree (kd_tree; not for
        cosine or ip, k <= 1024) or brute force; 'auto' lets lbknn choose.
    metric : str, default='euclidean'
        'euclidean'/'l2', 'manhattan'/'l1', 'chebyshev'/'linf', 'cosine',
        'ip' (largest inner product), or 'minkowski' with p in 1, 2, inf.
    p : float, default=2
        The power of the 'minkowski' metric (1, 2 or inf).
    temperature : float, default=0.07
        Temperature of the softmax weights (lbknn run's knn.temperature
        default: the kNN evaluation of DINO and instance discrimination).
    device : {'any', 'cpu', 'gpu'}, default='any'
        OpenCL device type ('any' prefers GPUs).
    comm : mpi4py.MPI.Intracomm or None, default=None
        Ranks that share the reference points: each rank passes its own
        shard to fit; every rank passes the same queries to predict and
        gets every result.
    """

    _supervised = "labels"

    def __init__(self, n_neighbors=5, *, weights="uniform", algorithm="auto",
                 metric="euclidean", p=2, temperature=0.07, device="any", comm=None):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.algorithm = algorithm
        self.metric = metric
        self.p = p
        self.temperature = temperature
        self.device = device
        self.comm = comm

    _WEIGHTS = ("uniform", "distance", "softmax")

    def fit(self, X, y):
        """Fit on this rank's rows X (n_samples, n_features) and their class labels y."""
        self._check_weights(self._WEIGHTS)
        return self._fit(X, y)

    def _classify(self, X, probabilities):
        check_is_fitted(self)
        weights = self._check_weights(self._WEIGHTS)
        k = self._query_k(_check_n_neighbors(self.n_neighbors))
        X = self._validate_queries(X)
        with _lib.lock:
            labels, proba = self._index(k).classify(X, k, weights, self.temperature,
                                                    probabilities=probabilities)
        if labels.size and labels.min() < 0:
            raise RuntimeError("lbknn: a query without a voting neighbour (a library bug)")
        return labels, proba

    def predict(self, X):
        """The predicted class of each row of X."""
        labels, _ = self._classify(X, probabilities=False)
        return self.classes_[labels]

    def predict_proba(self, X):
        """Each class's share of the neighbours' weights (columns in classes_ order)."""
        _, proba = self._classify(X, probabilities=True)
        if proba.shape[1] != len(self.classes_):
            raise RuntimeError(
                f"lbknn: {proba.shape[1]} probability columns for {len(self.classes_)} classes")
        return proba


class KNeighborsRegressor(RegressorMixin, _LbknnBase):
    """Regression by the mean of the k nearest neighbours' targets, on lbknn.

    weights: 'uniform' (the mean) or 'distance' (the 1/d weighted mean;
    neighbours at distance 0 alone when there are some). The other
    parameters are KNeighborsClassifier's.
    """

    _supervised = "targets"

    def __init__(self, n_neighbors=5, *, weights="uniform", algorithm="auto",
                 metric="euclidean", p=2, device="any", comm=None):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.algorithm = algorithm
        self.metric = metric
        self.p = p
        self.device = device
        self.comm = comm

    _WEIGHTS = ("uniform", "distance")

    def fit(self, X, y):
        """Fit on this rank's rows X (n_samples, n_features) and their targets y."""
        self._check_weights(self._WEIGHTS)
        return self._fit(X, y)

    def predict(self, X):
        """The (weighted) mean target of each row's neighbours."""
        check_is_fitted(self)
        weights = self._check_weights(self._WEIGHTS)
        k = self._query_k(_check_n_neighbors(self.n_neighbors))
        X = self._validate_queries(X)
        with _lib.lock:
            return self._index(k).regress(X, k, weights)


class NearestNeighbors(_LbknnBase):
    """Unsupervised k-nearest-neighbour search (kneighbors,
    kneighbors_graph), on lbknn. Parameters as KNeighborsClassifier's."""

    def __init__(self, n_neighbors=5, *, algorithm="auto", metric="euclidean", p=2,
                 device="any", comm=None):
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.metric = metric
        self.p = p
        self.device = device
        self.comm = comm

    def fit(self, X, y=None):
        """Fit on this rank's rows X (n_samples, n_features); y is ignored."""
        return self._fit(X, None)
