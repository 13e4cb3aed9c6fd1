"""pip.install: `pip install` from a clean copy of the tree, as README's
"Python" says, into fresh venvs on this machine with no network:

1. python3 -m venv --system-site-packages v
   v/bin/pip install --no-build-isolation ./lbknn
   then the README's Python example (the code of its "python" block) with
   v/bin/python from /, printing the README's output; `pip show lbknn`
   names the licence; the wheel holds one liblbknn (no links, no copies of
   MPI, OpenCL or HDF5, which it links from the system), the Python files
   and the version; the package loads that library; the commit is
   "release" (the copy is no git work tree).
2. the same with plain `pip install ./lbknn` (build isolation on: the
   backend asks for nothing, so pip fetches nothing).
3. the backend's sdist holds the tree and PKG-INFO, and no build output.

    pip_install.py SOURCE WORK"""
import os
import shutil
import subprocess
import sys
import tarfile
import time

from lbk_pytest import check, finish, require

source, work = sys.argv[1], os.path.abspath(sys.argv[2])
for module in ("venv", "ensurepip"):
    require(module)  # python3-venv (ensurepip brings pip's wheel)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = {k: v for k, v in os.environ.items() if k not in ("LBKNN_LIBRARY", "PYTHONPATH")}
# pip must not reach for an index: this machine has none, nor does the user's.
env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")


def run(command, cwd=work, **kw):
    print("+", " ".join(command), flush=True)
    started = time.monotonic()
    out = subprocess.run(command, cwd=cwd, env=kw.get("env", env), capture_output=True, text=True)
    print(out.stdout[-3000:], out.stderr[-3000:], f"({time.monotonic() - started:.1f} s)",
          flush=True)
    return out


# The clean copy: what git tracks or would (tracked and not ignored), or,
# outside git, the tree without build directories.
tree = os.path.join(work, "lbknn")
listing = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True)
if listing.returncode == 0:
    for rel in listing.stdout.decode().split("\0"):
        if rel and os.path.isfile(os.path.join(source, rel)):
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            shutil.copy2(os.path.join(source, rel), os.path.join(tree, rel))
else:
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns("build*", ".git", "__pycache__"))


def readme_block(name):
    lines = open(os.path.join(tree, "README.md"), encoding="utf-8").read().split("\n")
    i = lines.index(f"<!-- example: {name} -->") + 1
    while not lines[i].startswith("```"):
        i += 1
    return lines[i + 1:lines.index("```", i + 1)]


# The example's Python code: the here-document of its command block.
command = readme_block("python")
start = next(i for i, line in enumerate(command) if line.endswith("<<'EOF'")) + 1
code = "\n".join(command[start:command.index("EOF", start)]) + "\n"
expected = readme_block("python output")


def check_venv(venv, full):
    python = os.path.join(venv, "bin", "python")
    out = run([python, "-c", code], cwd="/")
    check(out.returncode == 0 and out.stdout.splitlines() == expected,
          f"{venv}: the README's example printed {out.stdout.splitlines()}, not {expected}")
    out = run([python, "-c", "import lbknn, os\n"
               "print(lbknn.library_path())\nprint(os.path.dirname(lbknn.__file__))\n"
               "print(lbknn.build_info()['commit'])\nprint(lbknn.__version__)"], cwd="/")
    if not check(out.returncode == 0, f"{venv}: import lbknn failed"):
        return
    library, package, commit, version = out.stdout.split("\n")[:4]
    check(library == os.path.join(package, "liblbknn.so." + version.split(".")[0]),
          f"{venv}: loaded {library}, not the wheel's own beside {package}")
    check(package.startswith(venv + "/"), f"{venv}: imported {package}")
    check(commit == "release", f"{venv}: commit '{commit}' from a copy that is no git tree")
    if not full:
        return
    show = run([os.path.join(venv, "bin", "pip"), "show", "lbknn"])
    check("License: BSD-3-Clause" in show.stdout.splitlines(), "pip show names no BSD-3-Clause")
    check(f"Version: {version}" in show.stdout.splitlines(), f"pip show: not version {version}")
    # What the wheel put in place, from its RECORD.
    dist = os.path.join(os.path.dirname(package), f"lbknn-{version}.dist-info")
    record = [line.split(",")[0] for line in open(os.path.join(dist, "RECORD"))]
    print("RECORD:", record)
    libraries = [p for p in record if ".so" in os.path.basename(p)]
    check(libraries == [f"lbknn/liblbknn.so.{version.split('.')[0]}"],
          f"the wheel's shared objects: {libraries} (want its one liblbknn)")
    check(not os.path.islink(library), f"{library} is a link")
    for name in ("__init__.py", "_lib.py", "_estimators.py", "_params.py", "_radius.py",
                 "_radius_search.py", "_version.py", "_status.py"):
        check(f"lbknn/{name}" in record, f"the wheel lacks lbknn/{name}")
    check("lbknn/_build_paths.py" not in record, "the wheel names the build's library")
    check(os.path.exists(os.path.join(dist, "LICENSE")), "no LICENSE in the dist-info")
    dynamic = run(["readelf", "-d", library]).stdout
    for needed in ("libmpi.so", "libOpenCL.so", "libhdf5"):
        check(f"[{needed}" in dynamic, f"{library} does not link the system's {needed}")
    check("RUNPATH" not in dynamic and "RPATH" not in dynamic,
          f"{library} keeps a build path: {dynamic}")
    resolved = run(["ldd", library]).stdout
    check(all(venv not in line for line in resolved.splitlines() if "=>" in line),
          f"{library} loads libraries from the venv: {resolved}")


# 1. The README's command, exactly.
venv = os.path.join(work, "v")
check(run([sys.executable, "-m", "venv", "--system-site-packages", venv]).returncode == 0,
      "python3 -m venv")
install = run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", "./lbknn"])
if check(install.returncode == 0, "pip install --no-build-isolation ./lbknn failed"):
    check_venv(venv, True)

# 2. Without the flag: build isolation, nothing fetched.
venv2 = os.path.join(work, "v2")
check(run([sys.executable, "-m", "venv", "--system-site-packages", venv2]).returncode == 0,
      "python3 -m venv (2)")
install = run([os.path.join(venv2, "bin", "pip"), "install", "./lbknn"])
if check(install.returncode == 0, "pip install ./lbknn (isolated) failed"):
    check_venv(venv2, False)

# 3. The sdist.
sdist = run([sys.executable, "-c", "import sys; sys.path.insert(0, 'lbknn/src/python/backend');"
             "import lbknn_build; print(lbknn_build.build_sdist('dist'))"])
if check(sdist.returncode == 0, "build_sdist failed"):
    name = sdist.stdout.strip().split("\n")[-1]
    with tarfile.open(os.path.join(work, "dist", name)) as tar:
        names = tar.getnames()
    base = name[:-len(".tar.gz")]
    for want in ("pyproject.toml", "LICENSE", "src/api/lbknn.h", "PKG-INFO", "CMakeLists.txt"):
        check(f"{base}/{want}" in names, f"the sdist lacks {want}")
    check(not any("/build/" in n or n.endswith(".so") for n in names), "build output in the sdist")
shutil.rmtree(work, ignore_errors=True)
finish()
