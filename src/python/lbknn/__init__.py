"""lbknn: exact k-nearest-neighbour and radius search, classification and regression
on OpenCL devices, over MPI ranks, with scikit-learn's estimator interface.

    from lbknn import KNeighborsClassifier
    clf = KNeighborsClassifier(n_neighbors=5).fit(X_train, y_train)
    clf.predict(X_test)

The estimators run on liblbknn (the C library of the same name), loaded on
first use: see lbknn._lib for where it is looked for (LBKNN_LIBRARY first).
"""

from ._estimators import (KNeighborsClassifier, KNeighborsRegressor, KNeighborsTransformer,
                          NearestNeighbors)
from ._radius import RadiusNeighborsClassifier, RadiusNeighborsRegressor
from ._lib import Error, LbknnRuntimeError, LbknnValueError, build_info, library_path
from ._lib import version as library_version

try:
    from ._version import __version__
except ImportError:  # a copy of the package without its generated _version.py
    __version__ = "unknown"

__all__ = [
    "KNeighborsClassifier",
    "KNeighborsRegressor",
    "KNeighborsTransformer",
    "NearestNeighbors",
    "RadiusNeighborsClassifier",
    "RadiusNeighborsRegressor",
    "Error",
    "LbknnValueError",
    "LbknnRuntimeError",
    "library_path",
    "build_info",
    "library_version",
]
