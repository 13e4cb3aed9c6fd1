"""radius_neighbors and radius_neighbors_graph, scikit-learn's
RadiusNeighborsMixin over lbknn's radius search (lbknn_index_radius):
every fitted point within the radius of each query, exactly, in
(distance, index) order, the counts exact over any number of ranks."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _lib


def object_rows(values, indptr):
    """scikit-learn's layout of radius results: an object array of one
    1-D array per query (views of `values`, rows of the CSR `indptr`)."""
    out = np.empty(len(indptr) - 1, dtype=object)
    for i in range(len(out)):
        out[i] = values[indptr[i]:indptr[i + 1]]
    return out


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def inward_float32(metric, radius, what="radius"):
    """A radius (a number or an array, taken as float64) as the float32
    the library searches with, rounded toward the inside of the ball: the
    largest float32 <= r (for 'ip', whose test is dot >= r, the smallest
    float32 >= r). Every distance is a float32, so it is <= r exactly when
    it is <= that float: the ball is r's own, where the nearest float32
    could take in more (0.1 rounds up, and a point at float32 0.1 lies
    beyond 0.1). The float64 itself is checked first: not NaN, within
    float32's range, and >= 0 but for 'ip' (-1e-50 is negative, though it
    rounds to -0)."""
    r = np.asarray(radius, dtype=np.float64)
    flat = r.reshape(-1)
    for bad, why in ((np.isnan(flat), "not a number"),
                     (~(np.abs(flat) <= _FLOAT32_MAX),
                      "not finite as a float32 (lbknn searches in float32: at most 3.4e38)"),
                     (flat < 0 if metric != "ip" else np.zeros(len(flat), bool),
                      "negative (a radius is a distance, >= 0; only metric 'ip' takes a "
                      "negative one: a least dot product)")):
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            at = f"[{i}]" if r.ndim else ""
            raise ValueError(f"{what}{at} = {flat[i]!r}: {why}")
    f = r.astype(np.float32)
    toward = np.float32(np.inf if metric == "ip" else -np.inf)
    outside = f.astype(np.float64) < r if metric == "ip" else f.astype(np.float64) > r
    return np.where(outside, np.nextafter(f, toward), f).astype(np.float32)


class RadiusNeighborsMixin:
    """The radius queries of the estimators that have `radius`. Results
    are always sorted by distance, ties by index (sort_results=True's
    order: the library's exact order), so sort_results changes nothing."""

    def _radius_arg(self, radius, n_queries):
        """(radius, radii): one radius for every query, or (lbknn's own)
        an array of one radius per query as float32 (the library's
        radii), with radius then unused. Values are the library's to check
        (finite; >= 0 but for 'ip', whose radius is a least dot product),
        each float32 toward the inside of its ball (inward_float32)."""
        if radius is None:
            radius = self.radius
        if radius is None:
            raise ValueError("radius is None: give one in the constructor or in the call")
        metric = self._lbknn_metric
        if np.ndim(radius) == 0:
            return float(inward_float32(metric, radius)), None
        radii = np.asarray(radius, dtype=np.float64)
        if radii.shape != (n_queries,):
            raise ValueError(f"radius: an array of shape {radii.shape} for {n_queries} queries "
                             "(one radius per query, or one number)")
        return 0.0, inward_float32(metric, radii)

    def _radius_lists(self, X, radius):
        """(indptr, int64 ids, float32 distances) of every query's
        neighbours within the radius, CSR; X=None: every fitted point's
        others (the library's self search, the point left out by id), every
        rank's rows to every rank. Collective under MPI."""
        if X is None:
            r, radii = self._radius_arg(radius, self.n_samples_fit_)
            with _lib.lock:
                mine = self._index(1).radius_self(r, radii)
            return self._gather_csr(*mine)
        X = self._validate_queries(X)
        r, radii = self._radius_arg(radius, X.shape[0])
        with _lib.lock:
            return self._index(1).radius(X, r, radii)

    def _gather_csr(self, indptr, indices, distances):
        """Every rank's rows of a CSR result, in rank order."""
        comm = self.comm
        if comm is None or comm.Get_size() == 1:
            return indptr, indices, distances
        parts = comm.allgather((indptr, indices, distances))
        starts = np.cumsum([0] + [int(p[0][-1]) for p in parts])
        indptr = np.concatenate([[0]] + [p[0][1:] + s for p, s in zip(parts, starts)])
        return (indptr.astype(np.int64), np.concatenate([p[1] for p in parts]),
                np.concatenate([p[2] for p in parts]))

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        """Every fitted point within `radius` (default: the estimator's) of
        each row of X, as sklearn.neighbors' radius_neighbors: object
        arrays of one float64 distance array and one int64 index array per
        query (points on the boundary included), sorted by distance, ties
        by index. With X=None, every fitted point's neighbours other than
        itself. `radius` may also be an array of one radius per query
        (lbknn's own). Under MPI every rank passes the same X and gets
        every row; indices are global row numbers in rank order."""
        check_is_fitted(self)
        if sort_results and not return_distance:
            raise ValueError("return_distance must be True if sort_results is True.")
        indptr, indices, distances = self._radius_lists(X, radius)
        ind = object_rows(indices, indptr)
        if not return_distance:
            return ind
        return object_rows(distances.astype(np.float64), indptr), ind

    def radius_neighbors_graph(self, X=None, radius=None, mode="connectivity",
                               sort_results=False):
        """The radius-neighbours graph as a CSR matrix (n_queries x
        n_samples_fit_), as sklearn.neighbors' radius_neighbors_graph:
        ones ('connectivity') or distances ('distance'), each row's
        entries in (distance, index) order."""
        from scipy.sparse import csr_matrix

        check_is_fitted(self)
        if mode not in ("connectivity", "distance"):
            raise ValueError(
                f'Unsupported mode, must be one of "connectivity", or "distance" but got '
                f'"{mode}" instead')
        indptr, indices, distances = self._radius_lists(X, radius)
        data = np.ones(len(indices)) if mode == "connectivity" else distances.astype(np.float64)
        return csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, self.n_samples_fit_))
