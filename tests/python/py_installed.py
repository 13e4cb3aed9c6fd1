"""python.installed: the package as `cmake --install` lays it out, in a
fresh prefix: no _build_paths.py (the build's library must not be what an
installed package loads), the library found next to the package by its
SONAME, and an estimator that fits and searches with it.

    py_installed.py CMAKE BUILD WORK PYTHON_DIR LIBDIR MAJOR
PYTHON_DIR and LIBDIR are relative to the prefix (LBKNN_PYTHON_INSTALL_DIR,
CMAKE_INSTALL_LIBDIR)."""
import os
import shutil
import subprocess
import sys

from lbk_pytest import check, finish

cmake, build, work, python_dir, libdir, major = sys.argv[1:7]
shutil.rmtree(work, ignore_errors=True)
prefix = os.path.join(work, "prefix")
run = subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True,
                     text=True)
check(run.returncode == 0, f"cmake --install: {run.stdout} {run.stderr}")
package = os.path.join(prefix, python_dir, "lbknn")
installed = sorted(os.listdir(package)) if os.path.isdir(package) else []
print("installed:", package, installed)
check({"__init__.py", "_lib.py", "_estimators.py", "_version.py"} <= set(installed),
      f"files installed: {installed}")
check("_build_paths.py" not in installed, "the build's library path was installed")

code = ("import lbknn, numpy as np\n"
        "print(lbknn.library_path())\n"
        "print(lbknn.__version__)\n"
        "d, i = lbknn.NearestNeighbors(n_neighbors=2).fit(np.eye(4)).kneighbors(np.eye(4))\n"
        "print(i[:, 0].tolist())\n")
# Only the prefix: not the build's package, nor a library named by the caller.
env = {k: v for k, v in os.environ.items() if k not in ("LBKNN_LIBRARY", "PYTHONPATH")}
env["PYTHONPATH"] = os.path.join(prefix, python_dir)
out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                     cwd=work)
print(out.stdout, out.stderr[-2000:])
lines = out.stdout.split("\n")
check(out.returncode == 0, f"the installed package failed: {out.stderr[-500:]}")
if out.returncode == 0:
    want = os.path.join(prefix, libdir, f"liblbknn.so.{major}")
    check(lines[0] == want, f"loaded {lines[0]}, not {want}")
    check(lines[2] == "[0, 1, 2, 3]", f"kneighbors: {lines[2]}")
shutil.rmtree(work, ignore_errors=True)
finish()
