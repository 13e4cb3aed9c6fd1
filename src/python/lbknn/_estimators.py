"""scikit-learn estimators over liblbknn: KNeighborsClassifier,
KNeighborsRegressor, NearestNeighbors and KNeighborsTransformer, with
scikit-learn's signatures and semantics (sklearn.neighbors), exact results
computed by lbknn on an OpenCL device, and optionally over the ranks of an
mpi4py communicator.
"""

import inspect
import numbers

import numpy as np
from sklearn import neighbors as _sk
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import _lib, _params
from ._radius_search import RadiusNeighborsMixin

try:  # scikit-learn >= 1.2: get_feature_names_out as its transformers
    from sklearn.base import ClassNamePrefixFeaturesOutMixin as _FeatureNamesOut
except ImportError:  # pragma: no cover - older scikit-learn
    class _FeatureNamesOut:
        pass

_FIT_METHOD = {"kdtree": "kd_tree", "brute": "brute"}


class _Native:
    """The lbknn index of a fitted estimator, built on demand, and every
    rank's labels or targets once a callable's weights needed them. One
    object per fit, kept while the index is rebuilt (for a larger k, or
    after unpickling), so that predicting leaves the estimator's __dict__
    as it was (scikit-learn's check_dict_unchanged)."""

    __slots__ = ("index", "all_y")

    def __init__(self, index=None):
        self.index = index
        self.all_y = None


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


def _fitted_points(X):
    """The points of a fitted neighbours estimator (lbknn's or
    scikit-learn's) or of a scikit-learn KDTree or BallTree passed as X,
    as scikit-learn's fit accepts them; anything else is returned as it
    is. Under MPI an lbknn estimator gives this rank's shard."""
    if isinstance(X, (_sk.KDTree, _sk.BallTree)):
        return np.asarray(X.data)
    if isinstance(X, BaseEstimator) and (hasattr(X, "kneighbors")
                                         or hasattr(X, "radius_neighbors")):
        check_is_fitted(X)
        return X._fit_X
    return X


def _callable_weights(fn, dist):
    """scikit-learn's contract: the callable maps the (n_queries, k)
    float64 distances to weights of the same shape; what it does at
    distance 0 is its own affair."""
    weights = np.asarray(fn(dist), dtype=np.float64)
    if weights.shape != dist.shape:
        raise ValueError(f"weights: the callable returned an array of shape {weights.shape} "
                         f"for distances of shape {dist.shape}")
    return weights


class _LbknnBase(BaseEstimator):
    """Fitting, the index and kneighbors, shared by the estimators.
    Subclasses set _supervised ('labels', 'targets' or None), _WEIGHTS
    and _parameter_constraints (scikit-learn's, see _params)."""

    _supervised = None
    _WEIGHTS = ("uniform",)
    _parameter_constraints = None

    # ---- parameters ----

    def _weights(self):
        """The weights to use: a name of _WEIGHTS or the callable (checked
        at every prediction too: set_params may have changed them)."""
        weights = "uniform" if self.weights is None else self.weights
        if callable(weights):
            return weights
        if weights not in self._WEIGHTS:
            raise ValueError(f"weights must be one of {list(self._WEIGHTS)}, a callable or None, "
                             f"got {weights!r}")
        return weights

    def _fit_k(self):
        """The k the index is built for at fit (later calls may ask more)."""
        return 1 if self.n_neighbors is None else _check_n_neighbors(self.n_neighbors)

    # ---- fitting ----

    def _validate_queries(self, X):
        # The fitted points' type (uint8, int8, float16) where X has it,
        # else float32, C order: what the library reads. check_array refuses
        # sparse, complex, 1-D, empty and non-finite input (also values
        # that overflow float32) with scikit-learn's own messages, and a
        # number of features other than fit's.
        # (Values beyond float32's range become inf, refused below; not
        # also a RuntimeWarning.)
        dtypes = [np.float32]
        if self._fit_X.dtype != np.float32:
            dtypes.append(self._fit_X.dtype)

        def validate():
            with np.errstate(over="ignore", invalid="ignore"):
                return self._validate_data(X, reset=False, accept_sparse=False,
                                           dtype=dtypes, order="C",
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
        # dtype None/'auto': a uint8, int8 or float16 array keeps its type
        # (the library keeps it compact where `lbknn run` would), any other
        # becomes float32; a named type: numbers first, then converted.
        asked = "auto" if self.dtype is None else self.dtype
        given = getattr(X, "dtype", None)
        if asked == "auto":
            dtype = given if given in _lib.DTYPES else np.float32
        else:
            dtype = np.float32 if asked == "float32" else "numeric"
        with np.errstate(over="ignore", invalid="ignore"):
            if self._supervised is None:
                X = self._validate_data(X, accept_sparse=False, dtype=dtype, order="C",
                                        copy=True, ensure_min_samples=min_samples,
                                        force_all_finite=finite)
            else:
                X, y = self._validate_data(
                    X, y, accept_sparse=False, dtype=dtype, order="C", copy=True,
                    ensure_min_samples=min_samples, y_numeric=self._supervised == "targets",
                    force_all_finite=finite)
        if asked not in ("auto", "float32"):
            X = np.ascontiguousarray(_params.convert_points(X, asked))
        if self._supervised == "labels":
            check_classification_targets(y)
        return X, y

    def _fit(self, X, y):
        _params.validate(self)
        metric, effective, effective_params = _params.resolve_metric(
            self.metric, self.p, self.metric_params)
        if self._supervised is not None:
            self._weights()
        comm = self.comm
        X = _fitted_points(X)
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
        self.effective_metric_ = effective
        self.effective_metric_params_ = effective_params
        self._lbknn_metric = metric
        self._lbknn_algorithm = self.algorithm
        self._lbknn_threads = _params.device_threads(self.n_jobs)
        self._lbknn_dtype = "auto" if self.dtype is None else self.dtype
        self._lbknn = _Native()
        with _lib.lock:
            index = self._index(min(self._fit_k(), n_total))
        self._fit_method = _FIT_METHOD.get(index.engine, index.engine)
        self.engine_ = index.engine
        self.device_ = index.ctx.device
        self.dtype_ = index.dtype()
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
            ctx = _lib.context(self.device, self.comm, self._lbknn_threads)
            labels = self._y if self._supervised == "labels" else None
            targets = self._y if self._supervised == "targets" else None
            engine = _params.engine(self._lbknn_algorithm, self._lbknn_metric, k)
            asked = "auto" if self.dtype is None else self.dtype
            native.index = _lib.Index(ctx, self._fit_X, k, self._lbknn_metric, engine,
                                      labels=labels, targets=targets,
                                      reference_type=getattr(self, "_lbknn_dtype", asked))
        return native.index

    def _query_k(self, n_neighbors):
        if n_neighbors > self.n_samples_fit_:
            raise ValueError(
                f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {n_neighbors}, "
                f"n_samples_fit = {self.n_samples_fit_}")
        return n_neighbors

    def _self_neighbours(self, k, return_distance=True):
        """(float64 distances or None, int64 ids) of this rank's fitted
        points' k nearest others, by the library's self search: no rows
        travel, each rank gets its own points' rows."""
        k = self._query_k(k + 1) - 1
        with _lib.lock:
            ids, dist = self._index(k + 1).search_self(k, self._fit_X.shape[0],
                                                       distances=return_distance)
        return (None if dist is None else dist.astype(np.float64)), ids

    def _gather_rows(self, a):
        """Every rank's rows of `a` in rank order (the global ids' order)."""
        comm = self.comm
        if _comm_size(comm) == 1:
            return a
        from mpi4py import MPI

        kind = {np.dtype(np.int64): MPI.INT64_T, np.dtype(np.float64): MPI.DOUBLE}[a.dtype]
        counts = np.array(comm.allgather(a.size), dtype=np.int64)
        out = np.empty((int(counts.sum()) // max(a.shape[1], 1), a.shape[1]), dtype=a.dtype)
        comm.Allgatherv(np.ascontiguousarray(a), [out, counts, kind])
        return out

    def _all_y(self):
        """Every rank's labels or targets in global id order (collective
        under MPI, once per fit): a callable's weights are applied here,
        to the neighbours' own."""
        native = self._lbknn
        if native.all_y is None:
            comm = self.comm
            native.all_y = (self._y if _comm_size(comm) == 1
                            else np.concatenate(comm.allgather(self._y)))
        return native.all_y

    def _own_rows(self):
        """This rank's rows among the global ids: [lo, hi) (collective)."""
        comm = self.comm
        n = self._fit_X.shape[0]
        if _comm_size(comm) == 1:
            return 0, n
        lo = comm.exscan(n) or 0
        return lo, lo + n

    # ---- queries ----

    def _neighbours(self, X, k):
        """(float64 distances, int64 global ids) of the k nearest of each
        row of validated X."""
        with _lib.lock:
            ids, dist = self._index(k).search(X, k)
        return dist.astype(np.float64), ids

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
        # An estimator pickled before scikit-learn's whole signature (lbknn
        # 0.2.0): the parameters it lacks at their defaults, and what its
        # fit would have derived from them.
        for name, param in inspect.signature(type(self).__init__).parameters.items():
            if name != "self" and name not in state and param.default is not param.empty:
                setattr(self, name, param.default)
        if "_fit_X" in state:
            if "_lbknn_algorithm" not in state:
                self._lbknn_algorithm = self.algorithm
                self._lbknn_threads = _params.device_threads(self.n_jobs)
            self._lbknn = _Native()


class _KNeighborsMixin:
    """kneighbors and kneighbors_graph, of the k-nearest-neighbours
    estimators (the radius estimators have radius_neighbors instead, as
    scikit-learn's)."""

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """The n_neighbors nearest fitted points of each row of X, as
        sklearn.neighbors' kneighbors: (distances, indices) sorted by
        distance, ties by index. With X=None, the neighbours of every fitted
        point other than itself. Distances are float64 (lbknn computes them
        in float32); indices int64, global row numbers over the ranks under
        MPI. Under MPI every rank passes the same X and gets every row."""
        check_is_fitted(self)
        k = _check_n_neighbors(self.n_neighbors if n_neighbors is None else n_neighbors)
        if X is None:
            # Each point's k nearest others (the library's self search: the
            # point itself left out by id; where more than k exact
            # duplicates have lower ids, the first k of them), every rank's
            # rows to every rank.
            dist, ids = self._self_neighbours(k, return_distance)
            ids = self._gather_rows(ids)
            if not return_distance:
                return ids
            return self._gather_rows(dist), ids
        X = self._validate_queries(X)
        k = self._query_k(k)
        with _lib.lock:
            ids, dist = self._index(k).search(X, k, distances=return_distance)
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


_SIGNATURE_DOC = """
    Parameters are scikit-learn's (sklearn.neighbors, the same names,
    order and defaults), then lbknn's own:

    n_neighbors : int, default=5
    weights : {'uniform', 'distance'}, callable or None, default='uniform'
        'uniform' (None too): equal votes; 'distance': 1/d, and where some
        neighbour is at distance 0 only those count; a callable maps the
        (n_queries, n_neighbors) float64 distances to weights of that
        shape, applied on the host to lbknn's exact neighbours.
    algorithm : {'auto', 'kd_tree', 'ball_tree', 'brute'}, default='auto'
        How lbknn searches, never what it finds: 'kd_tree' is lbknn's
        left-balanced k-d tree (l1, l2, linf; k <= 1024), 'brute' its
        brute-force engine, 'ball_tree' the k-d tree where it serves (else
        brute force), 'auto' lets lbknn choose from the data.
    leaf_size : int, default=30
        Accepted and checked; lbknn's tree keeps one point per node (no
        leaves to size), so it changes nothing.
    p : float, default=2
        The power of metric='minkowski': 1 (manhattan), 2 (euclidean) or
        inf (chebyshev); other values are refused. Other metrics ignore it,
        as in scikit-learn.
    metric : str, default='minkowski'
        'minkowski' (with p), 'euclidean'/'l2', 'manhattan'/'cityblock'/
        'l1', 'chebyshev'/'infinity'/'linf', 'cosine' (1 - cos), 'ip' (the
        largest inner product; lbknn's own).
    metric_params : dict or None, default=None
        Only {'p': ...} with 'minkowski' (it overrides p, with
        scikit-learn's SyntaxWarning).
    n_jobs : int or None, default=None
        A CPU device's share of the cores (PoCL's worker threads; an OpenCL
        sub-device): None or -1 all, n at most n, -2 all but one. GPUs
        ignore it. Results never depend on it.
    device : {'any', 'cpu', 'gpu'}, default='any'
        OpenCL device type ('any' prefers GPUs).
    comm : mpi4py.MPI.Intracomm or None, default=None
        Ranks that share the reference points: each rank passes its own
        shard to fit; every rank passes the same queries to the other
        methods and gets every result.
    dtype : {None, 'auto', 'float32', 'uint8', 'int8', 'float16'}, default=None
        The type the fitted points are kept at. None or 'auto': a uint8,
        int8 or float16 array keeps its type (1 or 2 bytes a value on the
        host and the device where lbknn keeps it compact: brute force, not
        cosine; uint8 and int8 with exact integer distances), any other
        array becomes float32. A name converts X to that type and keeps it
        compact also where lbknn's float32 prefilter would be faster;
        values the type cannot hold (2.5 or 300 for 'uint8', 1e6 for
        'float16') are a ValueError. dtype_ says what fit kept (a self
        search, kneighbors(X=None), or a radius search widens it to float32
        later, as lbknn's log says). Queries of the fitted type are passed
        as they are, any other as float32 (uint8 and int8: integer values
        of the type's range).
"""


class KNeighborsClassifier(_KNeighborsMixin, ClassifierMixin, _LbknnBase):
    __doc__ = """Classifier implementing the k-nearest neighbours vote, on lbknn.
""" + _SIGNATURE_DOC + """
    weights may also be 'softmax': exp(similarity / temperature), with the
    similarity the dot product for 'ip', cos for 'cosine', minus the
    distance else.

    temperature : float, default=0.07
        Temperature of the softmax weights (lbknn run's knn.temperature
        default: the kNN evaluation of DINO and instance discrimination).
    """

    _supervised = "labels"
    _WEIGHTS = ("uniform", "distance", "softmax")
    _parameter_constraints = _params.constraints(
        _sk.KNeighborsClassifier, weights=_WEIGHTS, **_params.lbknn_constraints(temperature=True))

    def __init__(self, n_neighbors=5, *, weights="uniform", algorithm="auto", leaf_size=30, p=2,
                 metric="minkowski", metric_params=None, n_jobs=None, device="any", comm=None,
                 temperature=0.07, dtype=None):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.metric = metric
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device
        self.comm = comm
        self.temperature = temperature
        self.dtype = dtype

    def fit(self, X, y):
        """Fit on this rank's rows X (n_samples, n_features), or a fitted
        neighbours estimator or tree, and their class labels y."""
        return self._fit(X, y)

    def _classify(self, X, probabilities):
        check_is_fitted(self)
        weights = self._weights()
        k = self._query_k(_check_n_neighbors(self.n_neighbors))
        X = self._validate_queries(X)
        if callable(weights):
            return self._classify_weighted(X, k, weights)
        with _lib.lock:
            labels, proba = self._index(k).classify(X, k, weights, self.temperature,
                                                    probabilities=probabilities)
        if labels.size and labels.min() < 0:
            raise RuntimeError("lbknn: a query without a voting neighbour (a library bug)")
        return labels, proba

    def _classify_weighted(self, X, k, fn):
        # As scikit-learn's predict_proba: each class's weights summed in
        # neighbour order, then normalised (a row of zero weights stays
        # zero); the prediction is the class of the largest sum, the
        # smaller class at a tie (its weighted_mode's rule).
        dist, ids = self._neighbours(X, k)
        weights = _callable_weights(fn, dist)
        votes = self._all_y()[ids]
        proba = np.zeros((len(ids), len(self.classes_)))
        rows = np.arange(len(ids))
        for j in range(k):
            proba[rows, votes[:, j]] += weights[:, j]
        labels = np.argmax(proba, axis=1)
        total = proba.sum(axis=1)[:, None]
        total[total == 0.0] = 1.0
        return labels, proba / total

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


class KNeighborsRegressor(_KNeighborsMixin, RegressorMixin, _LbknnBase):
    __doc__ = """Regression by the (weighted) mean of the k nearest neighbours'
    targets, on lbknn.
""" + _SIGNATURE_DOC

    _supervised = "targets"
    _WEIGHTS = ("uniform", "distance")
    _parameter_constraints = _params.constraints(
        _sk.KNeighborsRegressor, weights=_WEIGHTS, **_params.lbknn_constraints())

    def __init__(self, n_neighbors=5, *, weights="uniform", algorithm="auto", leaf_size=30, p=2,
                 metric="minkowski", metric_params=None, n_jobs=None, device="any", comm=None,
                 dtype=None):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.metric = metric
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device
        self.comm = comm
        self.dtype = dtype

    def fit(self, X, y):
        """Fit on this rank's rows X (n_samples, n_features), or a fitted
        neighbours estimator or tree, and their targets y."""
        return self._fit(X, y)

    def predict(self, X):
        """The (weighted) mean target of each row's neighbours."""
        check_is_fitted(self)
        weights = self._weights()
        k = self._query_k(_check_n_neighbors(self.n_neighbors))
        X = self._validate_queries(X)
        if callable(weights):
            # scikit-learn's sums: the weighted targets, over the weights.
            dist, ids = self._neighbours(X, k)
            w = _callable_weights(weights, dist)
            return np.sum(self._all_y()[ids] * w, axis=1) / np.sum(w, axis=1)
        with _lib.lock:
            return self._index(k).regress(X, k, weights)


class NearestNeighbors(_KNeighborsMixin, RadiusNeighborsMixin, _LbknnBase):
    __doc__ = """Unsupervised neighbour search: the k nearest (kneighbors,
    kneighbors_graph) and every point within a radius (radius_neighbors,
    radius_neighbors_graph), on lbknn.
""" + _SIGNATURE_DOC + """
    radius : float, default=1.0
        The radius of radius_neighbors and radius_neighbors_graph when
        they are given none: every fitted point at distance <= radius (for
        'ip', every point whose dot product is >= radius).
    """

    _parameter_constraints = _params.constraints(_sk.NearestNeighbors,
                                                 **_params.lbknn_constraints())

    def __init__(self, *, n_neighbors=5, radius=1.0, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, device="any",
                 comm=None, dtype=None):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device
        self.comm = comm
        self.dtype = dtype

    def _fit_k(self):
        # One more than asked: kneighbors() (each point's others) searches
        # n_neighbors + 1, and an index of K serves every k <= K.
        return 1 + super()._fit_k()

    def fit(self, X, y=None):
        """Fit on this rank's rows X (n_samples, n_features), or a fitted
        neighbours estimator or tree; y is ignored."""
        return self._fit(X, None)


class KNeighborsTransformer(_FeatureNamesOut, TransformerMixin, _KNeighborsMixin,
                            _LbknnBase):
    __doc__ = """X into its k-nearest-neighbours graph, as scikit-learn's
    KNeighborsTransformer: a sparse (n_queries, n_samples_fit_) CSR matrix
    for the estimators that take metric='precomputed' (Isomap, TSNE,
    DBSCAN, SpectralClustering, KNeighborsClassifier, ...) in a Pipeline.

    mode : {'distance', 'connectivity'}, default='distance'
        'distance': each row holds n_neighbors + 1 neighbours with their
        distances (transforming the fitted points, each is its own first
        neighbour at distance 0, as scikit-learn); 'connectivity':
        n_neighbors ones.
""" + _SIGNATURE_DOC + """
    Under comm, fit_transform gives each rank the rows of its own points
    (columns: global ids over the ranks); transform(X) gives every rank
    every row of the same X.
    """

    _parameter_constraints = _params.constraints(_sk.KNeighborsTransformer,
                                                 **_params.lbknn_constraints())

    def __init__(self, *, mode="distance", n_neighbors=5, algorithm="auto", leaf_size=30,
                 metric="minkowski", p=2, metric_params=None, n_jobs=None, device="any",
                 comm=None, dtype=None):
        self.mode = mode
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device
        self.comm = comm
        self.dtype = dtype

    def _neighbours_per_row(self):
        return _check_n_neighbors(self.n_neighbors) + (self.mode == "distance")

    def _fit_k(self):
        return self._neighbours_per_row()

    def fit(self, X, y=None):
        """Fit on this rank's rows X (n_samples, n_features); y is ignored."""
        if self._parameter_constraints is None and self.mode not in ("distance",
                                                                     "connectivity"):
            raise ValueError(f"mode must be 'distance' or 'connectivity', got {self.mode!r}")
        self._fit(X, None)
        self._n_features_out = self.n_samples_fit_
        return self

    def transform(self, X):
        """The graph of X's rows: (n_queries, n_samples_fit_) CSR."""
        check_is_fitted(self)
        return self.kneighbors_graph(X, mode=self.mode, n_neighbors=self._neighbours_per_row())

    def fit_transform(self, X, y=None):
        """The graph of the fitted points, scikit-learn's convention: each
        point itself first (at distance 0), then its nearest others in
        (distance, index) order, n_neighbors + 1 entries a row in 'distance'
        mode, n_neighbors in 'connectivity' mode. This is fit(X).transform(X)
        wherever no two points coincide (at exact duplicates, transform puts
        the one of lower index first). Under comm, each rank gets the rows
        of its own points (the library's self search: no rows travel)."""
        from scipy.sparse import csr_matrix

        self.fit(X)
        per_row = self._neighbours_per_row()
        self._query_k(per_row)
        lo, hi = self._own_rows()
        n = hi - lo
        ids = np.empty((n, per_row), dtype=np.int64)
        dist = np.zeros((n, per_row))
        ids[:, 0] = np.arange(lo, hi)
        if per_row > 1:
            others_d, others = self._self_neighbours(per_row - 1, self.mode == "distance")
            ids[:, 1:] = others
            if self.mode == "distance":
                dist[:, 1:] = others_d
        data = dist.ravel() if self.mode == "distance" else np.ones(ids.size)
        indptr = np.arange(0, ids.size + 1, per_row)
        return csr_matrix((data, ids.ravel(), indptr), shape=(n, self.n_samples_fit_))
