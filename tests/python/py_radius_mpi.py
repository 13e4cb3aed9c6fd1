"""python.radius_mpi, under mpirun -n 2: each rank fits its own uneven
shard with comm=MPI.COMM_WORLD, every rank passes the same queries, and
every rank's radius_neighbors (X given and X=None, ids global row numbers
in rank order), radius_neighbors_graph, RadiusNeighborsClassifier's
predictions and probabilities (with an outlier) and RadiusNeighborsRegressor's
values (a NaN among them) equal, byte for byte, those of one process
(comm=None) with all the rows, on both engines; so do kneighbors over
uint8 shards (dtype='uint8')."""
import warnings

import numpy as np
import lbk_pytest
from lbk_pytest import check, finish, require

require("mpi4py")
from mpi4py import MPI  # noqa: E402

import lbknn  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
seed = 4041
if rank == 0:
    print(f"seed {seed}, {size} ranks", flush=True)
gen = np.random.default_rng(seed)  # the same draws on every rank
N = 300
X = gen.normal(size=(N, 3))
y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0.3)
t = X[:, 0] - 2 * X[:, 2]
Q = np.vstack([gen.normal(size=(50, 3)), [[30.0, 30.0, 30.0]]])  # the last: no neighbour
cuts = np.linspace(0, N, size + 1).astype(int)
cuts[1:-1] += 17  # uneven
lo, hi = cuts[rank], cuts[rank + 1]
R = 0.8


def same(a, b):
    """Object arrays of arrays, CSR matrices or arrays, byte for byte."""
    if hasattr(a, "indptr"):
        return (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
                and np.array_equal(a.data, b.data))
    if a.dtype == object:
        return len(a) == len(b) and all(np.array_equal(x, z) for x, z in zip(a, b))
    return np.array_equal(a, b, equal_nan=True)


def outputs(nn, clf, reg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"radius_neighbors(Q)": nn.radius_neighbors(Q),
                "radius_neighbors()": nn.radius_neighbors(),
                "graph(Q)": nn.radius_neighbors_graph(Q, mode="distance"),
                "graph()": nn.radius_neighbors_graph(),
                "predict": clf.predict(Q), "predict_proba": clf.predict_proba(Q),
                "regress": reg.predict(Q)}


for algorithm in ("kd_tree", "brute"):
    for weights in ("uniform", "distance"):
        kw = dict(radius=R, algorithm=algorithm)
        solo = outputs(lbknn.NearestNeighbors(**kw).fit(X),
                       lbknn.RadiusNeighborsClassifier(weights=weights, outlier_label=9,
                                                       **kw).fit(X, y),
                       lbknn.RadiusNeighborsRegressor(weights=weights, **kw).fit(X, t))
        kw["comm"] = comm
        shared = outputs(lbknn.NearestNeighbors(**kw).fit(X[lo:hi]),
                         lbknn.RadiusNeighborsClassifier(weights=weights, outlier_label=9,
                                                         **kw).fit(X[lo:hi], y[lo:hi]),
                         lbknn.RadiusNeighborsRegressor(weights=weights, **kw).fit(X[lo:hi],
                                                                                   t[lo:hi]))
        for what, want in solo.items():
            got = shared[what]
            ok = all(same(a, b) for a, b in zip(got, want)) if isinstance(want, tuple) \
                else same(got, want)
            check(ok, f"rank {rank} {algorithm} {weights}: {what} differs from one process")
        check(shared["predict"][-1] == 9 and np.isnan(shared["regress"][-1]),
              f"rank {rank}: the outlier's prediction {shared['predict'][-1]}")

# No outlier label: every rank raises scikit-learn's error, none waits.
clf = lbknn.RadiusNeighborsClassifier(radius=R, comm=comm).fit(X[lo:hi], y[lo:hi])
try:
    clf.predict(Q)
    check(False, f"rank {rank}: no error for a query without neighbours")
except ValueError as e:
    check("No neighbors found for test samples array([" in str(e) and ", 50])" in str(e),
          f"rank {rank}: {e}")
wide = lbknn.RadiusNeighborsClassifier(radius=3.0, comm=comm).fit(X[lo:hi], y[lo:hi])
check(np.array_equal(wide.predict(Q[:20]), lbknn.RadiusNeighborsClassifier(radius=3.0).fit(
    X, y).predict(Q[:20])), f"rank {rank}: predict after the failure")

failed = comm.allreduce(1 if lbk_pytest.failures else 0)
if failed and rank == 0:
    print(f"{failed} rank(s) failed")
# Compact shards (dtype='uint8': brute force keeps them at a byte a value
# on each rank): kneighbors with uint8 and float queries, and the self
# search (which widens the index), as one process with all the rows.
Xu = gen.integers(0, 256, size=(N, 6)).astype(np.uint8)
Qu = gen.integers(0, 256, size=(20, 6)).astype(np.uint8)
whole = lbknn.NearestNeighbors(n_neighbors=4, algorithm="brute", dtype="uint8").fit(Xu)
parts = lbknn.NearestNeighbors(n_neighbors=4, algorithm="brute", dtype="uint8",
                               comm=comm).fit(Xu[lo:hi])
check(parts.dtype_ == "uint8" and parts._fit_X.dtype == np.uint8, f"uint8: {parts.dtype_}")
for q in (Qu, Qu.astype(np.float64)):
    check(all(same(a, b) for a, b in zip(parts.kneighbors(q), whole.kneighbors(q))),
          f"uint8 shards, {q.dtype} queries: kneighbors")
check(all(same(a, b) for a, b in zip(parts.kneighbors(), whole.kneighbors())),
      "uint8 shards: kneighbors()")
finish()
