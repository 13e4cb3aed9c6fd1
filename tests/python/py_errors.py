"""python.errors: bad parameters, input and library failures raise
ValueError (bad usage, options or data) or RuntimeError (no device, ...)
with the library's own message, as lbknn.Error subclasses with its status;
input errors scikit-learn's validation catches first keep its messages.

    py_errors.py OPENCL_GATE"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from lbk_pytest import check, expect_raises, finish, rng

import scipy.sparse  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

import lbknn  # noqa: E402

gate = sys.argv[1]
gen = rng(2206)
X = gen.normal(size=(60, 3))
y = gen.integers(0, 2, size=60)
C, R, N = lbknn.KNeighborsClassifier, lbknn.KNeighborsRegressor, lbknn.NearestNeighbors


def library_error(kind, fn, what, words):
    """fn() raises the library's error: `kind`, an lbknn.Error with a
    status, a one-line message naming one of `words`."""
    e = expect_raises(kind, fn, what=what)
    if e is None:
        return
    print(f"{what}: {type(e).__name__}: {e}")
    check(isinstance(e, lbknn.Error) and e.status > 0, f"{what}: not an lbknn.Error: {e!r}")
    text = str(e)
    check(text and "\n" not in text and any(w in text for w in words),
          f"{what}: message {text!r} names none of {words}")


# From the library: the k-d tree refuses cosine and ip, and K above its maximum.
library_error(ValueError, lambda: C(3, metric="cosine", algorithm="kd_tree").fit(X, y),
              "cosine on the k-d tree", ["kdtree", "k-d", "cosine"])
library_error(ValueError, lambda: N(n_neighbors=3, metric="ip", algorithm="kd_tree").fit(X),
              "ip on the k-d tree", ["kdtree", "k-d", "ip"])
big = gen.normal(size=(1500, 2))
library_error(ValueError, lambda: N(n_neighbors=1100, algorithm="kd_tree").fit(big),
              "K = 1100 on the k-d tree", ["1024", "knn.k", "kdtree"])
library_error(ValueError, lambda: C(3, metric="ip", weights="distance").fit(X, y).predict(X),
              "distance weights for ip", ["ip", "distance", "weights"])
# No OpenCL platform at all (an empty vendor directory): the library's
# device error, a RuntimeError, in a process of its own.
empty = tempfile.mkdtemp()
code = ("import lbknn, numpy as np\n"
        "try:\n"
        "    lbknn.NearestNeighbors(n_neighbors=1).fit(np.zeros((3, 2)))\n"
        "except RuntimeError as e:\n"
        "    print(type(e).__name__, isinstance(e, lbknn.Error), e.status, '|', e)\n")
run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env=dict(os.environ, OCL_ICD_VENDORS=empty, OCL_ICD_FILENAMES=""))
print("no OpenCL:", run.stdout.strip(), run.stderr.strip()[-300:])
check(run.returncode == 0 and run.stdout.startswith("LbknnRuntimeError True 6 |")
      and len(run.stdout.split("|", 1)[1].strip()) > 0,
      f"no OpenCL device: expected a RuntimeError with status 6, got {run.stdout!r}")
os.rmdir(empty)
if subprocess.run([gate, "--has", "gpu"], capture_output=True).returncode == 1:
    library_error(RuntimeError, lambda: N(n_neighbors=1, device="gpu").fit(X),
                  "device='gpu' without a GPU", ["gpu", "GPU", "device"])

# Parameters, checked by the estimators at fit (python.sklearn_api checks
# scikit-learn's own error type and lbknn's refusals one by one).
for what, make in [
    ("metric='minkowski', p=3", lambda: C(metric="minkowski", p=3)),
    ("metric='hamming'", lambda: C(metric="hamming")),
    ("metric=callable", lambda: C(metric=lambda a, b: 0.0)),
    ("weights='bogus'", lambda: C(weights="bogus")),
    ("weights='softmax' for the regressor", lambda: R(weights="softmax")),
    ("temperature=0", lambda: C(weights="softmax", temperature=0.0)),
    ("n_neighbors=0", lambda: C(n_neighbors=0)),
    ("device='tpu'", lambda: C(device="tpu")),
    ("comm=42", lambda: C(comm=42)),
]:
    expect_raises(ValueError, lambda: make().fit(X, y), what=what)
expect_raises(TypeError, lambda: C(n_neighbors=2.5).fit(X, y), what="n_neighbors=2.5")

# Input, refused by scikit-learn's validation with its messages.
bad = X.copy()
bad[3, 1] = np.nan
expect_raises(ValueError, lambda: C().fit(bad, y), "NaN", "NaN in fit")
expect_raises(ValueError, lambda: C().fit(X, y).predict(bad), "NaN", "NaN in predict")
inf = X.copy()
inf[0, 0] = np.inf
expect_raises(ValueError, lambda: N().fit(inf), "infinity", "inf in fit")
expect_raises(ValueError, lambda: N().fit(X * 1e300), "infinity", "beyond float32 in fit")
expect_raises(ValueError, lambda: N().fit(X + 1j), "Complex", "complex")
expect_raises(ValueError, lambda: N().fit(X[:, 0]), "2D", "1-D X")
expect_raises(ValueError, lambda: N().fit(X).kneighbors(X[0]), "2D", "1-D query")
e = expect_raises(TypeError, lambda: N().fit(scipy.sparse.csr_matrix(X)), "sparse", "sparse")
expect_raises(TypeError, lambda: N().fit(X).kneighbors(scipy.sparse.csr_matrix(X)), "sparse",
              "sparse query")
expect_raises(ValueError, lambda: N().fit(np.empty((0, 3))), "0 sample", "no rows")
expect_raises(ValueError, lambda: C().fit(X, y).predict(X[:, :2]), "features",
              "a query of the wrong dimension")
expect_raises(ValueError, lambda: C().fit(X, y + 0.5), "Unknown label type",
              "continuous labels")
expect_raises(ValueError, lambda: R().fit(X, np.where(y, np.nan, 1.0)), "NaN", "NaN target")
expect_raises(ValueError, lambda: C(n_neighbors=61).fit(X, y).predict(X),
              "Expected n_neighbors <= n_samples_fit", "n_neighbors > n_samples_fit")
expect_raises(ValueError, lambda: N().fit(X).kneighbors(X, n_neighbors=61),
              "Expected n_neighbors <= n_samples_fit", "kneighbors n_neighbors > n_samples_fit")
expect_raises(ValueError, lambda: N().fit(X).kneighbors(X, n_neighbors=0), "n_neighbors > 0",
              "kneighbors n_neighbors=0")
expect_raises(NotFittedError, lambda: C().predict(X), what="predict before fit")
expect_raises(NotFittedError, lambda: N().kneighbors(X), what="kneighbors before fit")
finish()
