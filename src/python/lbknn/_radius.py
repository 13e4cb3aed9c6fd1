"""RadiusNeighborsClassifier and RadiusNeighborsRegressor: scikit-learn's
estimators of the same names over lbknn's radius search, every fitted point
within the radius voting (or averaged) by the library's rules
(lbknn_index_radius_classify and _regress, the votes of `lbknn run`), so
that Python, C and the command give the same bytes."""

import warnings

import numpy as np
from sklearn import neighbors as _sk
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import _is_arraylike, check_is_fitted

from . import _lib, _params
from ._estimators import _LbknnBase
from ._radius_search import RadiusNeighborsMixin, object_rows

_NO_NEIGHBOUR = ("No neighbors found for test samples %r, you can try using larger radius, "
                 "giving a label for outliers, or considering removing them from your dataset.")
_NAN_WARNING = ("One or more samples have no neighbors within specified radius; "
                "predicting NaN.")

_RADIUS_DOC = """
    Parameters are scikit-learn's (sklearn.neighbors, the same names,
    order and defaults), then lbknn's own:

    radius : float, default=1.0
        Every fitted point at distance <= radius votes (for 'ip': every
        point whose dot product is >= radius).
    weights : {'uniform', 'distance'}, callable or None, default='uniform'
        'uniform' (None too): equal votes; 'distance': 1/d, and where some
        neighbour is at distance 0 only those count; a callable maps the
        object array of each query's float64 distances to weights of the
        same layout (scikit-learn's contract), applied on the host.
    algorithm, leaf_size, p, metric, metric_params, n_jobs, device, comm, dtype :
        as for lbknn.KNeighborsClassifier: how lbknn searches and on what,
        never what it finds.
"""


def _callable_radius_weights(fn, indptr, distances):
    """scikit-learn's contract for a radius estimator's callable weights:
    the object array of each query's float64 distances in, one weight per
    neighbour out (an object array of arrays, or anything that indexes
    so); each query's weights as a float64 array."""
    out = fn(object_rows(distances.astype(np.float64), indptr))
    rows = []
    for i in range(len(indptr) - 1):
        w = np.asarray(out[i], dtype=np.float64)
        if w.shape != (indptr[i + 1] - indptr[i],):
            raise ValueError(f"weights: the callable's weights of query {i} have shape "
                             f"{w.shape} for {indptr[i + 1] - indptr[i]} neighbours")
        rows.append(w)
    return rows


class _RadiusBase(RadiusNeighborsMixin, _LbknnBase):
    _WEIGHTS = ("uniform", "distance")

    def _fit_k(self):
        # The radius search reads no K-lists: the smallest index serves.
        return 1

    def _radius_args(self, n_queries):
        return self._radius_arg(self.radius, n_queries)

    def _host_lists(self, X):
        """(indptr, ids, float32 distances) of validated X, for callable weights."""
        r, radii = self._radius_args(X.shape[0])
        with _lib.lock:
            return self._index(1).radius(X, r, radii)


class RadiusNeighborsClassifier(ClassifierMixin, _RadiusBase):
    __doc__ = """Classifier implementing a vote among the neighbours within a
    radius, on lbknn (scikit-learn's RadiusNeighborsClassifier rules).
""" + _RADIUS_DOC + """
    outlier_label : {None, 'most_frequent'} or a label, default=None
        The prediction for a query with no neighbour within the radius:
        None raises scikit-learn's ValueError naming such queries;
        'most_frequent' is the most frequent training class (over every
        rank). Its probabilities are 1 for that class, or all 0 (with
        scikit-learn's warning) when the label is no training class.
    """

    _supervised = "labels"
    _parameter_constraints = _params.constraints(
        _sk.RadiusNeighborsClassifier, weights=_RadiusBase._WEIGHTS,
        **_params.lbknn_constraints())

    def __init__(self, radius=1.0, *, weights="uniform", algorithm="auto", leaf_size=30, p=2,
                 metric="minkowski", outlier_label=None, metric_params=None, n_jobs=None,
                 device="any", comm=None, dtype=None):
        self.radius = radius
        self.weights = weights
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.metric = metric
        self.outlier_label = outlier_label
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device
        self.comm = comm
        self.dtype = dtype

    def fit(self, X, y):
        """Fit on this rank's rows X (n_samples, n_features), or a fitted
        neighbours estimator or tree, and their class labels y."""
        self._fit(X, y)
        self.outlier_label_ = self._outlier_labels()
        return self

    def _outlier_labels(self):
        # scikit-learn's outlier_label_: one label per output (one here).
        label, classes = self.outlier_label, self.classes_
        if label is None:
            return None
        if isinstance(label, str) and label == "most_frequent":
            counts = np.bincount(self._y, minlength=len(classes))
            if self.comm is not None:
                counts = self.comm.allreduce(counts)
            return [classes[counts.argmax()]]
        if _is_arraylike(label) and not isinstance(label, str):
            if len(label) != 1:
                raise ValueError("The length of outlier_label: {} is inconsistent with the "
                                 "output length: {}".format(label, 1))
            labels = list(label)
        else:
            labels = [label]
        for one in labels:
            if _is_arraylike(one) and not isinstance(one, str):
                raise TypeError("The outlier_label of classes {} is supposed to be a scalar, "
                                "got {}.".format(classes, one))
            if np.append(classes, one).dtype != classes.dtype:
                raise TypeError("The dtype of outlier_label {} is inconsistent with classes {} "
                                "in y.".format(one, classes))
        return labels

    def _outlier_code(self):
        """The outlier label's column among classes_, or -1 (none, or no
        training class)."""
        if self.outlier_label_ is None:
            return -1
        hit = np.flatnonzero(self.classes_ == self.outlier_label_[0])
        return int(hit[0]) if hit.size == 1 else -1

    def _classify(self, X, probabilities):
        """(labels, probabilities): column numbers of classes_, -1 where no
        neighbour voted and the outlier label is no class."""
        check_is_fitted(self)
        weights = self._weights()
        X = self._validate_queries(X)
        code = self._outlier_code()
        if callable(weights):
            labels, proba, outliers = self._classify_weighted(X, weights, code)
        else:
            r, radii = self._radius_args(X.shape[0])
            with _lib.lock:
                labels, proba = self._index(1).radius_classify(X, r, radii, weights, code,
                                                               probabilities=probabilities)
            outliers = np.flatnonzero(labels < 0)
        if self.outlier_label_ is None and outliers.size > 0:
            raise ValueError(_NO_NEIGHBOUR % outliers)
        if outliers.size > 0 and code < 0:
            warnings.warn("Outlier label {} is not in training classes. All class "
                          "probabilities of outliers will be assigned with 0."
                          "".format(self.outlier_label_[0]))
        return labels, proba

    def _classify_weighted(self, X, fn, code):
        # As scikit-learn's predict_proba: each class's weights summed
        # (np.bincount), an outlier's probability 1 for the outlier label's
        # class, each row normalised (a row of zero weights stays zero).
        indptr, ids, dist = self._host_lists(X)
        counts = np.diff(indptr)
        outliers = np.flatnonzero(counts == 0)
        if self.outlier_label_ is None and outliers.size > 0:
            raise ValueError(_NO_NEIGHBOUR % outliers)
        weights = _callable_radius_weights(fn, indptr, dist)
        votes = self._all_y()
        proba = np.zeros((len(counts), len(self.classes_)))
        for i in np.flatnonzero(counts):
            proba[i] = np.bincount(votes[ids[indptr[i]:indptr[i + 1]]], weights[i],
                                   minlength=len(self.classes_))
        if code >= 0:
            proba[outliers, code] = 1.0
        total = proba.sum(axis=1)[:, None]
        labels = np.where(total[:, 0] == 0.0, -1, np.argmax(proba, axis=1))
        total[total == 0.0] = 1.0
        return labels, proba / total, outliers

    def predict(self, X):
        """The predicted class of each row of X (outlier_label_ where no
        neighbour votes)."""
        labels, _ = self._classify(X, probabilities=False)
        predicted = self.classes_[np.maximum(labels, 0)]
        if self.outlier_label_ is not None and labels.size and labels.min() < 0:
            predicted[labels < 0] = self.outlier_label_[0]
        return predicted

    def predict_proba(self, X):
        """Each class's share of the neighbours' weights (columns in classes_ order)."""
        _, proba = self._classify(X, probabilities=True)
        return proba


class RadiusNeighborsRegressor(RegressorMixin, _RadiusBase):
    __doc__ = """Regression by the (weighted) mean of the targets of the
    neighbours within a radius, on lbknn (scikit-learn's
    RadiusNeighborsRegressor rules: NaN, with its warning, for a query with
    no neighbour).
""" + _RADIUS_DOC

    _supervised = "targets"
    _parameter_constraints = _params.constraints(
        _sk.RadiusNeighborsRegressor, weights=_RadiusBase._WEIGHTS,
        **_params.lbknn_constraints())

    def __init__(self, radius=1.0, *, weights="uniform", algorithm="auto", leaf_size=30, p=2,
                 metric="minkowski", metric_params=None, n_jobs=None, device="any", comm=None,
                 dtype=None):
        self.radius = radius
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
        """The (weighted) mean target of each row's neighbours within the
        radius; NaN (with scikit-learn's warning) where there is none."""
        check_is_fitted(self)
        weights = self._weights()
        X = self._validate_queries(X)
        if callable(weights):
            values = self._predict_weighted(X, weights)
        else:
            r, radii = self._radius_args(X.shape[0])
            with _lib.lock:
                values, _ = self._index(1).radius_regress(X, r, radii, weights)
        if np.any(np.isnan(values)):
            warnings.warn(_NAN_WARNING)
        return values

    def _predict_weighted(self, X, fn):
        # scikit-learn's np.average of each query's targets by the weights.
        indptr, ids, dist = self._host_lists(X)
        weights = _callable_radius_weights(fn, indptr, dist)
        targets = self._all_y()
        values = np.full(len(indptr) - 1, np.nan)
        for i in range(len(values)):
            if indptr[i + 1] > indptr[i]:
                values[i] = np.average(targets[ids[indptr[i]:indptr[i + 1]]],
                                       weights=weights[i])
        return values
