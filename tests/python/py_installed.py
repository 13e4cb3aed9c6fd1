"""python.installed: the package as `cmake --install` lays it out, where the
interpreter finds it with no PYTHONPATH.

- Into a fresh venv as the prefix: the package goes to the venv's own
  site-packages (sysconfig's purelib, asked of the venv's interpreter), the
  venv's python imports it with no PYTHONPATH, and it loads the prefix's
  liblbknn.so.MAJOR (never the build's: no _build_paths.py is installed),
  with which an estimator fits and searches.
- Staged with DESTDIR for /usr/local and /usr: the package lands in the
  directory of that prefix which this interpreter searches
  (/usr/local/lib/python3.X/dist-packages and /usr/lib/python3/dist-packages
  on Debian), and the staged package loads the staged library
  (_install_paths.py is relative, so the staged tree works where it lies).

    py_installed.py CMAKE BUILD WORK LIBDIR MAJOR
LIBDIR is CMAKE_INSTALL_LIBDIR, relative to the prefix."""
import os
import shutil
import site
import subprocess
import sys

from lbk_pytest import check, finish

cmake, build, work, libdir, major = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
# Only what the install gives: not the build's package, nor a library
# named by the caller.
clean_env = {k: v for k, v in os.environ.items() if k not in ("LBKNN_LIBRARY", "PYTHONPATH")}


def install(prefix, destdir=None):
    env = dict(os.environ)
    if destdir:
        env["DESTDIR"] = destdir
    run = subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True,
                         text=True, env=env)
    check(run.returncode == 0, f"cmake --install --prefix {prefix}: {run.stdout} {run.stderr}")


def package_files(package):
    installed = sorted(os.listdir(package)) if os.path.isdir(package) else []
    print("installed:", package, installed)
    check({"__init__.py", "_lib.py", "_estimators.py", "_radius.py", "_radius_search.py",
           "_version.py", "_status.py",
           "_install_paths.py"}
          <= set(installed), f"files installed in {package}: {installed}")
    check("_build_paths.py" not in installed, "the build's library path was installed")


def run_python(python, code, env):
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, cwd=work)
    print(out.stdout, out.stderr[-2000:])
    check(out.returncode == 0, f"{python} failed: {out.stderr[-500:]}")
    return out.stdout.split("\n") if out.returncode == 0 else None


# 1. A venv as the prefix: found by the venv's python alone.
venv = os.path.join(work, "venv")
subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv],
               check=True)
vpython = os.path.join(venv, "bin", "python")
install(venv)
purelib = subprocess.run([vpython, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
package_files(os.path.join(purelib, "lbknn"))
lines = run_python(vpython, "import lbknn, numpy as np\n"
                   "print(lbknn.library_path())\n"
                   "print(lbknn.__file__)\n"
                   "d, i = lbknn.NearestNeighbors(n_neighbors=2).fit(np.eye(4)).kneighbors(np.eye(4))\n"
                   "print(i[:, 0].tolist())\n", clean_env)
if lines:
    want = os.path.join(venv, libdir, f"liblbknn.so.{major}")
    check(lines[0] == want, f"loaded {lines[0]}, not {want}")
    check(lines[1] == os.path.join(purelib, "lbknn", "__init__.py"), f"imported {lines[1]}")
    check(lines[2] == "[0, 1, 2, 3]", f"kneighbors: {lines[2]}")

# 2. /usr/local and /usr, staged: the directory this interpreter searches.
searched = [os.path.normpath(p) for p in site.getsitepackages()]
for prefix in ("/usr/local", "/usr"):
    stage = os.path.join(work, "stage" + prefix.replace("/", "-"))
    install(prefix, stage)
    # This interpreter's directory directly under the prefix's lib (Debian's
    # /usr/local/lib/... is under /usr too, but is /usr/local's).
    want = next((p for p in searched if p.startswith(prefix + "/lib")), None)
    if want is None:
        print(f"{sys.executable} searches nothing under {prefix}/lib: {searched}")
        continue
    staged = stage + want
    package_files(os.path.join(staged, "lbknn"))
    env = dict(clean_env, PYTHONPATH=staged)
    lines = run_python(sys.executable, "import lbknn; print(lbknn.library_path())", env)
    if lines:
        want_lib = os.path.join(stage + prefix, libdir, f"liblbknn.so.{major}")
        check(lines[0] == want_lib, f"the staged {prefix} package loaded {lines[0]}, not {want_lib}")
shutil.rmtree(work, ignore_errors=True)
finish()
