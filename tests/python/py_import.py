"""python.import: the package imports from the build tree, loads this
build's library, and says what is missing when there is none.

    py_import.py EXPECTED_LIBRARY EXPECTED_VERSION"""
import os
import subprocess
import sys

from lbk_pytest import check, finish

expected_library, expected_version = sys.argv[1], sys.argv[2]

import lbknn  # noqa: E402

for name in ("KNeighborsClassifier", "KNeighborsRegressor", "NearestNeighbors"):
    check(hasattr(lbknn, name), f"lbknn.{name} missing")
check(lbknn.__version__ == expected_version,
      f"lbknn.__version__ {lbknn.__version__!r}, the project's is {expected_version!r}")
check(os.path.samefile(lbknn.library_path(), expected_library),
      f"loaded {lbknn.library_path()}, not this build's {expected_library}")
check(lbknn.library_version() == expected_version,
      f"the library says version {lbknn.library_version()!r}, the project {expected_version!r}")
# Estimator parameters need no library.
params = lbknn.KNeighborsClassifier(n_neighbors=3, metric="cosine").get_params()
check(params["n_neighbors"] == 3 and params["metric"] == "cosine" and params["comm"] is None,
      f"get_params: {params}")

# Without a library, importing still works and the first use says why it cannot.
code = ("import lbknn\n"
        "try:\n"
        "    lbknn.library_version()\n"
        "except OSError as e:\n"
        "    print('OSError:', e)\n")
env = dict(os.environ, LBKNN_LIBRARY="/nonexistent/liblbknn.so")
out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
print(out.stdout.strip(), out.stderr.strip())
check(out.returncode == 0 and "OSError:" in out.stdout and "/nonexistent/liblbknn.so" in out.stdout
      and "LBKNN_LIBRARY" in out.stdout,
      f"a missing library: exit {out.returncode}, {out.stdout!r} {out.stderr!r}")
finish()
