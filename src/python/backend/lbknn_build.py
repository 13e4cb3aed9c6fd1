"""lbknn's PEP 517 build backend: `pip install ./lbknn` builds liblbknn with
CMake and makes a wheel of the Python package with that library beside it.

It needs the standard library, CMake and a C compiler, nothing from PyPI
(pyproject.toml: requires = []), so that pip builds offline on a stock
Debian 12, with or without build isolation. What it writes:

    lbknn/*.py                      the package (with _version.py)
    lbknn/liblbknn.so.MAJOR         the library, one file under its SONAME
                                    (the name the loader looks for beside
                                    the package); it links the system's MPI,
                                    OpenCL loader, HDF5, libyaml, zlib and
                                    libdeflate, none of which is copied in
    lbknn-VERSION.dist-info/        METADATA (from pyproject.toml's
                                    [project], the version from lbknn.h),
                                    WHEEL, LICENSE, RECORD

The wheel is tagged py3-none-<platform>: the package calls the library
through ctypes, so it suits any Python 3 but only this platform.

Settings (pip --config-settings KEY=VALUE, or -C):
    cmake.args   more CMake arguments, split as a shell would
                 (also the environment's LBKNN_CMAKE_ARGS)
    build-dir    build there and keep it (default: a temporary directory)
"""

import base64
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HEADER = os.path.join(ROOT, "src", "api", "lbknn.h")


def _log(message):
    print(f"lbknn_build: {message}", file=sys.stderr, flush=True)


def _pyproject():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib
        except ImportError:
            raise RuntimeError("lbknn_build reads pyproject.toml with tomllib (Python 3.11) "
                               "or tomli: install python3-tomli, or build with Python 3.11")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def version():
    """MAJOR.MINOR.PATCH from lbknn.h, the version's one place."""
    parts = {}
    with open(HEADER, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if len(words) == 3 and words[0] == "#define" and words[1] in (
                    "LBKNN_VERSION_MAJOR", "LBKNN_VERSION_MINOR", "LBKNN_VERSION_PATCH"):
                parts[words[1]] = int(words[2])
    if len(parts) != 3:
        raise RuntimeError(f"{HEADER}: no LBKNN_VERSION_MAJOR/MINOR/PATCH lines")
    return "{LBKNN_VERSION_MAJOR}.{LBKNN_VERSION_MINOR}.{LBKNN_VERSION_PATCH}".format(**parts)


def _metadata():
    """METADATA (core metadata 2.1) from pyproject.toml's [project]."""
    project = _pyproject()["project"]
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {version()}",
        f"Summary: {project['description']}",
    ]
    if "keywords" in project:
        lines.append("Keywords: " + ",".join(project["keywords"]))
    authors = [a["name"] for a in project.get("authors", []) if "name" in a]
    if authors:
        lines.append("Author: " + ", ".join(authors))
    lines.append(f"License: {project['license']['text']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    body = ""
    readme = project.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _dist_info():
    return f"lbknn-{version()}.dist-info"


def _tag():
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


def _settings(config_settings):
    settings = dict(config_settings or {})
    args = list(_pyproject().get("tool", {}).get("lbknn", {}).get("cmake-args", []))
    for extra in (os.environ.get("LBKNN_CMAKE_ARGS", ""), settings.get("cmake.args", "")):
        args += shlex.split(" ".join(extra) if isinstance(extra, list) else extra)
    return args, settings.get("build-dir")


def _run(command):
    _log(" ".join(shlex.quote(c) for c in command))
    subprocess.run(command, check=True, stdout=sys.stderr)


def _build(build_dir, cmake_args):
    """Configure and build the library and the package's build-tree copy;
    returns (the library's file, the package's directory)."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("lbknn_build needs CMake (Debian: apt-get install cmake), and the "
                           "libraries of README's 'Two commands' (scripts/common.sh)")
    _run([cmake, "-S", ROOT, "-B", build_dir] + cmake_args)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _run([cmake, "--build", build_dir, "--target", "lbknn_python", "--parallel", jobs])
    package = os.path.join(build_dir, "python", "lbknn")
    # The build names its library there (the real file, liblbknn.so.X.Y.Z).
    paths = {}
    with open(os.path.join(package, "_build_paths.py"), encoding="utf-8") as f:
        exec(f.read(), paths)
    return paths["LIBRARY"], package


class _Wheel:
    """A wheel being written: files in a fixed order and date, so that the
    same tree gives the same bytes, and RECORD with each one's hash."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.record = []
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01
        self.date = time.gmtime(max(epoch, 315532800))[:6]

    def add(self, name, data, mode=0o644):
        if isinstance(data, str):
            data = data.encode("utf-8")
        info = zipfile.ZipInfo(name, self.date)
        info.external_attr = (0o100000 | mode) << 16  # a regular file, never a link
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{name},sha256={digest},{len(data)}")

    def close(self, record_name):
        self.record.append(f"{record_name},,")
        info = zipfile.ZipInfo(record_name, self.date)
        info.external_attr = (0o100000 | 0o644) << 16
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def _write_dist_info(write):
    dist_info = _dist_info()
    write(f"{dist_info}/METADATA", _metadata())
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        write(f"{dist_info}/LICENSE", f.read())


# --- PEP 517 hooks ---------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    def write(name, text):
        path = os.path.join(metadata_directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    _write_dist_info(write)
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    cmake_args, build_dir = _settings(config_settings)
    scratch = None
    if not build_dir:
        scratch = build_dir = tempfile.mkdtemp(prefix="lbknn-build-")
    try:
        library, package = _build(os.path.abspath(build_dir), cmake_args)
        major = version().split(".")[0]
        name = f"lbknn-{version()}-{_tag()}.whl"
        os.makedirs(wheel_directory, exist_ok=True)
        wheel = _Wheel(os.path.join(wheel_directory, name))
        for file in sorted(os.listdir(package)):
            # _build_paths.py names the build's library, gone with the build.
            if file.endswith(".py") and file != "_build_paths.py":
                with open(os.path.join(package, file), encoding="utf-8") as f:
                    wheel.add(f"lbknn/{file}", f.read())
        with open(library, "rb") as f:
            wheel.add(f"lbknn/liblbknn.so.{major}", f.read(), 0o755)
        dist_info = _dist_info()
        _write_dist_info(wheel.add)
        wheel.add(f"{dist_info}/WHEEL",
                  "Wheel-Version: 1.0\nGenerator: lbknn_build\nRoot-Is-Purelib: false\n"
                  f"Tag: {_tag()}\n")
        wheel.close(f"{dist_info}/RECORD")
        _log(f"wrote {name}")
        return name
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _source_files():
    """The tree's files: git's (tracked, and untracked ones it does not
    ignore) in a git work tree of its own, else every file but build
    directories and caches."""
    try:
        top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if os.path.realpath(top) == os.path.realpath(ROOT):
            out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                                  "--exclude-standard"], capture_output=True, check=True).stdout
            return sorted(p for p in out.decode().split("\0")
                          if p and os.path.isfile(os.path.join(ROOT, p)))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not (d.startswith("build") or d in (
            ".git", "__pycache__", "gpu-bundle"))]
        files += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames]
    return sorted(files)


def build_sdist(sdist_directory, config_settings=None):
    """lbknn-VERSION.tar.gz: the source tree, from which pip builds the
    same wheel (PKG-INFO at its top, as sdists carry it)."""
    base = f"lbknn-{version()}"
    name = f"{base}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in _source_files():
            tar.add(os.path.join(ROOT, rel), f"{base}/{rel}", recursive=False)
        data = _metadata().encode("utf-8")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    return name
