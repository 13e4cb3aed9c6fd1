"""python.pickle: a fitted estimator pickles without the library's handles
(its training arrays travel, as scikit-learn's do) and, unpickled, rebuilds
its index on first use: here, in a fresh interpreter too, with the same
predictions, probabilities, targets and neighbours as before. copy.deepcopy
works the same way; an unfitted estimator pickles as its parameters; one
with comm set refuses with a TypeError that says why."""
import copy
import os
import pickle
import subprocess
import sys

import numpy as np
from lbk_pytest import check, finish, rng

import lbknn  # noqa: E402

gen = rng(2204)
X = gen.normal(size=(200, 3))
y = gen.integers(0, 4, size=200)
t = gen.normal(size=200)
Q = gen.normal(size=(50, 3))

models = [
    lbknn.KNeighborsClassifier(4, weights="distance").fit(X, y),
    lbknn.KNeighborsRegressor(3, metric="manhattan").fit(X, t),
    lbknn.NearestNeighbors(n_neighbors=6, algorithm="brute").fit(X),
]


def outputs(m):
    out = [*m.kneighbors(Q), m.kneighbors(n_neighbors=7, return_distance=False)]
    if hasattr(m, "predict"):
        out.append(m.predict(Q))
    if hasattr(m, "predict_proba"):
        out.append(m.predict_proba(Q))
    return out


for m in models:
    name = type(m).__name__
    before = outputs(m)
    blob = pickle.dumps(m)
    check(b"_lbknn'" not in blob and b"ctypes" not in blob, f"{name}: the pickle holds handles")
    back = pickle.loads(blob)
    check(back._lbknn.index is None, f"{name}: an index before first use")
    after = outputs(back)
    check(all(np.array_equal(a, b) for a, b in zip(before, after)),
          f"{name}: results differ after unpickling")
    check(back._lbknn.index is not None, f"{name}: no index after use")
    twin = copy.deepcopy(m)
    check(all(np.array_equal(a, b) for a, b in zip(before, outputs(twin))),
          f"{name}: results differ after deepcopy")
    check(twin._lbknn is not m._lbknn, f"{name}: deepcopy shares the index")
    check(m.get_params() == back.get_params(), f"{name}: parameters differ")

    # A fresh process: nothing of this one's library state exists there.
    path = f"{os.environ.get('TMPDIR', '/tmp')}/lbknn-pickle-{os.getpid()}.npz"
    code = ("import pickle, sys, numpy as np\n"
            "m = pickle.loads(sys.stdin.buffer.read())\n"
            "Q = np.load(sys.argv[1])['Q']\n"
            "out = [*m.kneighbors(Q), m.kneighbors(n_neighbors=7, return_distance=False)]\n"
            "if hasattr(m, 'predict'): out.append(m.predict(Q))\n"
            "if hasattr(m, 'predict_proba'): out.append(m.predict_proba(Q))\n"
            "np.savez(sys.argv[1], *out)\n")
    np.savez(path, Q=Q)
    run = subprocess.run([sys.executable, "-c", code, path], input=blob, capture_output=True)
    check(run.returncode == 0, f"{name}: the fresh interpreter failed: {run.stderr.decode()}")
    if run.returncode == 0:
        with np.load(path) as f:
            fresh = [f[f"arr_{i}"] for i in range(len(before))]
        check(all(np.array_equal(a, b) for a, b in zip(before, fresh)),
              f"{name}: results differ in a fresh interpreter")
    os.unlink(path)

unfitted = pickle.loads(pickle.dumps(lbknn.KNeighborsClassifier(3, metric="l1")))
check(unfitted.get_params()["metric"] == "l1" and not hasattr(unfitted, "_lbknn"),
      "unfitted round trip")
check(np.array_equal(unfitted.fit(X, y).predict(Q),
                     lbknn.KNeighborsClassifier(3, metric="l1").fit(X, y).predict(Q)),
      "an unpickled unfitted estimator fits")


class FakeComm:
    pass


est = lbknn.NearestNeighbors()
est.comm = FakeComm()
try:
    pickle.dumps(est)
    check(False, "comm set: pickled")
except TypeError as e:
    check("comm" in str(e), f"comm set: message {e}")
finish()
