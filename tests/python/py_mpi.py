"""python.mpi, under mpirun -n P: each rank fits only its own shard with
comm=MPI.COMM_WORLD (uneven shards, one without some class, in a second
round one that is empty), every rank passes the same queries, and every
rank's predictions, probabilities, regression values and neighbours
(kneighbors(X) and kneighbors(X=None), whose ids are global row numbers in
rank order) equal those of a single-process fit (comm=None) of all the
rows, on both engines, and scikit-learn's (random data, no ties)."""
import numpy as np
import scipy.sparse
import lbk_pytest
from lbk_pytest import check, finish, require

require("mpi4py")
from mpi4py import MPI  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier as SkKNN  # noqa: E402
from sklearn.neighbors import KNeighborsRegressor as SkReg  # noqa: E402
from sklearn.neighbors import NearestNeighbors as SkNN  # noqa: E402

import lbknn  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
seed = 2207
if rank == 0:
    print(f"seed {seed}, {size} ranks", flush=True)
gen = np.random.default_rng(seed)  # the same draws on every rank
N = 360
X = gen.normal(size=(N, 3))
y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0.3)  # classes 0..3
t = X[:, 0] - 2 * X[:, 2] + gen.normal(scale=0.1, size=N)
Q = gen.normal(size=(80, 3))
# Rows in rank order; the last rank's shard holds no class 3.
order = np.concatenate([np.flatnonzero(y != 3), np.flatnonzero(y == 3)])
order = np.concatenate([order[order.size // 2:], order[:order.size // 2]]) if size > 1 else order
X, y, t = X[order], y[order], t[order]


def shards(empty_rank):
    cuts = np.linspace(0, N, size + 1).astype(int)
    cuts[1:-1] += np.arange(1, size) * 7  # uneven
    if empty_rank is not None:
        cuts[empty_rank + 1] = cuts[empty_rank]
    return cuts[rank], cuts[rank + 1]


def same_everywhere(value, what):
    every = comm.allgather(value)
    check(all(np.array_equal(np.asarray(v), np.asarray(every[0])) for v in every),
          f"rank {rank}: {what} differs between ranks")


# The references, computed once: scikit-learn's and a single process's
# (comm=None: this rank alone, all the rows).
WEIGHTS = ("uniform", "distance")
sk = {}
for weights in WEIGHTS:
    c = SkKNN(5, weights=weights, algorithm="brute").fit(X, y)
    sk[weights] = (c.predict(Q), c.predict_proba(Q),
                   SkReg(4, weights=weights, algorithm="brute").fit(X, t).predict(Q))
sk_n = SkNN(n_neighbors=6, algorithm="brute").fit(X)
sk["kneighbors(Q)"], sk["kneighbors()"] = sk_n.kneighbors(Q), sk_n.kneighbors()
sk["k9"] = sk_n.kneighbors(n_neighbors=9, return_distance=False)
solo = {}
for algorithm in ("kd_tree", "brute"):
    for weights in WEIGHTS:
        c = lbknn.KNeighborsClassifier(5, weights=weights, algorithm=algorithm).fit(X, y)
        r = lbknn.KNeighborsRegressor(4, weights=weights, algorithm=algorithm).fit(X, t)
        solo[algorithm, weights] = (c.predict(Q), c.predict_proba(Q), r.predict(Q))
    n = lbknn.NearestNeighbors(n_neighbors=6, algorithm=algorithm).fit(X)
    solo[algorithm, "kneighbors(Q)"] = n.kneighbors(Q)
    solo[algorithm, "kneighbors()"] = n.kneighbors()

for empty_rank in (None, 1 if size > 2 else None):
    lo, hi = shards(empty_rank)
    mine = slice(lo, hi)
    print(f"rank {rank}: rows {lo}..{hi} (classes {sorted(set(y[mine].tolist()))})", flush=True)
    for algorithm in ("kd_tree", "brute"):
        case = f"rank {rank} {algorithm} empty={empty_rank}"
        for weights in WEIGHTS:
            solo_p, solo_pp, solo_v = solo[algorithm, weights]
            sk_p, sk_pp, sk_v = sk[weights]
            dist_c = lbknn.KNeighborsClassifier(5, weights=weights, algorithm=algorithm,
                                                comm=comm).fit(X[mine], y[mine])
            check(np.array_equal(dist_c.classes_, [0, 1, 2, 3]), f"{case}: classes_ "
                  f"{dist_c.classes_}")
            check(dist_c.n_samples_fit_ == N, f"{case}: n_samples_fit_ {dist_c.n_samples_fit_}")
            p, pp = dist_c.predict(Q), dist_c.predict_proba(Q)
            check(np.array_equal(p, solo_p), f"{case} {weights}: predict != P=1")
            check(np.array_equal(pp, solo_pp), f"{case} {weights}: predict_proba != P=1")
            check(np.array_equal(p, sk_p), f"{case} {weights}: predict != sklearn")
            check(np.allclose(pp, sk_pp, atol=1e-6), f"{case} {weights}: predict_proba != sklearn")
            check(dist_c.score(Q, sk_p) == 1.0, f"{case}: score")
            same_everywhere(p, f"{weights} predict")
            same_everywhere(pp, f"{weights} predict_proba")

            dist_r = lbknn.KNeighborsRegressor(4, weights=weights, algorithm=algorithm,
                                               comm=comm).fit(X[mine], t[mine])
            v = dist_r.predict(Q)
            check(np.array_equal(v, solo_v), f"{case} {weights}: regress != P=1")
            check(np.allclose(v, sk_v, rtol=1e-5), f"{case} {weights}: regress != sklearn")
            same_everywhere(v, f"{weights} regress")

        dist_n = lbknn.NearestNeighbors(n_neighbors=6, algorithm=algorithm,
                                        comm=comm).fit(X[mine])
        for what, args in (("kneighbors(Q)", (Q,)), ("kneighbors()", ())):
            d, i = dist_n.kneighbors(*args)
            sd, si = solo[algorithm, what]
            rd, ri = sk[what]
            check(np.array_equal(i, si) and np.array_equal(d, sd), f"{case}: {what} != P=1")
            check(np.array_equal(i, ri) and np.allclose(d, rd, rtol=1e-5),
                  f"{case}: {what} != sklearn")
            same_everywhere(i, what)
        i9 = dist_n.kneighbors(n_neighbors=9, return_distance=False)
        check(np.array_equal(i9, sk["k9"]), f"{case}: kneighbors(n_neighbors=9) != sklearn "
              "(a rebuild)")

# KNeighborsTransformer: under comm, fit_transform gives each rank its own
# rows of the graph of every rank's points; stacked in rank order, they
# are the graph of one process (comm=None), for P = size and, on a
# communicator of the first two ranks, P = 2; transform(Q) gives every rank
# every row.
solo_graph = lbknn.KNeighborsTransformer(n_neighbors=4).fit_transform(X)
solo_q = lbknn.KNeighborsTransformer(n_neighbors=4, mode="connectivity").fit(X).transform(Q)
pair = comm.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
for sub in (comm, pair):
    if sub == MPI.COMM_NULL:
        continue
    p, r = sub.Get_size(), sub.Get_rank()
    cuts = np.linspace(0, N, p + 1).astype(int) + np.r_[0, np.arange(1, p) * 5, 0]
    lo, hi = cuts[r], cuts[r + 1]
    mine = lbknn.KNeighborsTransformer(n_neighbors=4, comm=sub).fit_transform(X[lo:hi])
    rows = sub.allgather(mine)
    whole = scipy.sparse.vstack(rows).tocsr()
    check(mine.shape == (hi - lo, N), f"rank {rank}, P = {p}: own rows' shape {mine.shape}")
    check(whole.shape == solo_graph.shape and (whole != solo_graph).nnz == 0
          and np.array_equal(whole.indices, solo_graph.indices),
          f"rank {rank}, P = {p}: the transformer's graph differs from P = 1")
    q = lbknn.KNeighborsTransformer(n_neighbors=4, mode="connectivity",
                                    comm=sub).fit(X[lo:hi]).transform(Q)
    check((q != solo_q).nnz == 0 and np.array_equal(q.indices, solo_q.indices),
          f"rank {rank}, P = {p}: transform(Q) differs from P = 1")
if pair != MPI.COMM_NULL:
    pair.Free()

# Bad input on one rank only: every rank raises (none waits for the others
# in a collective call), the failing rank its own error, the others one that
# names it.
lo, hi = shards(None)
bad = X[lo:hi].copy()
if rank == size - 1:
    bad[0, 0] = np.nan
try:
    lbknn.KNeighborsClassifier(3, comm=comm).fit(bad, y[lo:hi])
    check(False, f"rank {rank}: NaN on rank {size - 1}: no error")
except ValueError as e:
    own = rank == size - 1
    check(("NaN" in str(e)) if own else (f"rank {size - 1} failed" in str(e) and "NaN" in str(e)),
          f"rank {rank}: NaN on rank {size - 1}: message {e}")
fitted = lbknn.NearestNeighbors(n_neighbors=2, comm=comm).fit(X[lo:hi])
Qbad = Q[:, :2] if rank == 0 else Q
try:
    fitted.kneighbors(Qbad)
    check(False, f"rank {rank}: a query of the wrong dimension on rank 0: no error")
except ValueError as e:
    check("features" in str(e), f"rank {rank}: wrong dimension on rank 0: message {e}")
# And the communicator still works afterwards.
check(np.array_equal(fitted.kneighbors(Q)[1], sk_n.kneighbors(Q, n_neighbors=2)[1]),
      f"rank {rank}: kneighbors after the failures")

if rank == 0:
    print(f"{size} ranks compared", flush=True)
failed = comm.allreduce(1 if lbk_pytest.failures else 0)
if failed and rank == 0:
    print(f"{failed} rank(s) failed")
finish()
