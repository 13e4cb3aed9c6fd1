"""ctypes bindings to liblbknn (src/api/lbknn.h): loading, status codes,
and small owners of the library's handles.

The library is looked up in this order: the environment variable
LBKNN_LIBRARY (a path), liblbknn.so.MAJOR beside this file (where a wheel
puts it: `pip install`), the build tree's library (_build_paths, written
by CMake next to the package in build/python only), liblbknn.so.MAJOR in
the lib directory of the prefix the package is installed under
(_install_paths, written by `cmake --install`), then the system's
(ctypes.util.find_library). It is loaded on first use, so that `import
lbknn` works, and says what is missing, without it.
"""

import atexit
import ctypes
import ctypes.util
import logging
import os
import threading
import weakref

import numpy as np

# lbknn_status's codes, each named as in lbknn.h without LBKNN_ (OK,
# ERR_USAGE, ...): _status.py is written at build time from the status list
# (src/core/status.h), so that no code is kept by hand here.
from ._status import *  # noqa: F403

_c_void_p = ctypes.c_void_p
_c_int = ctypes.c_int


# lbknn_weights
WEIGHTS = {"uniform": 0, "distance": 1, "softmax": 2}
# lbknn_dtype: the types the library takes points and queries in.
DTYPES = {np.dtype(np.float32): 0, np.dtype(np.uint8): 1, np.dtype(np.int8): 2,
          np.dtype(np.float16): 3}
_DTYPE_NAMES = {code: dtype.name for dtype, code in DTYPES.items()}

_log = logging.getLogger("lbknn")


class Error(Exception):
    """A failure reported by liblbknn; `status` is its lbknn_status code."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class LbknnValueError(Error, ValueError):
    """A bad argument, option or input (LBKNN_ERR_USAGE, _CONFIG, _INPUT)."""


class LbknnRuntimeError(Error, RuntimeError):
    """A device, memory, MPI, I/O or internal failure."""


def _raise(status, message):
    message = message or status_string(status)
    if status in (ERR_USAGE, ERR_CONFIG, ERR_INPUT):
        raise LbknnValueError(message, status)
    raise LbknnRuntimeError(message, status)


def _text(b):
    return "" if b is None else b.decode("utf-8", "replace")


# The library takes one thread at a time per context (lbknn.h) and the
# estimators share one context per device and communicator: every call, and
# the reading of the message a failed call left, holds this lock. (A thread
# waiting for it does not hold the GIL, so a log callback in the thread that
# holds it still runs.)
_lock = threading.RLock()
lock = _lock
_lib = None


def library_candidates():
    """The paths and names tried, in order (the first that loads wins)."""
    explicit = os.environ.get("LBKNN_LIBRARY")
    if explicit:
        # Named outright: nothing else may stand in for it.
        return [explicit]
    found = []
    here = os.path.dirname(os.path.abspath(__file__))
    # A wheel's own library, by its SONAME (the interface this package was
    # written for), the one copy it holds.
    beside = os.path.join(here, f"liblbknn.so.{_major()}")
    if os.path.exists(beside):
        found.append(beside)
    try:
        from . import _build_paths

        found.append(_build_paths.LIBRARY)
    except ImportError:
        pass
    # Installed by cmake --install: the prefix's library, where
    # _install_paths says it is (else <prefix>/lib/pythonX.Y/.../lbknn's
    # <prefix>/lib), by its SONAME.
    try:
        from . import _install_paths

        libdir = os.path.normpath(os.path.join(here, _install_paths.LIBDIR))
    except ImportError:
        libdir = os.path.normpath(os.path.join(here, "..", "..", ".."))
    for name in (f"liblbknn.so.{_major()}", "liblbknn.so"):
        path = os.path.join(libdir, name)
        if os.path.exists(path):
            found.append(path)
    system = ctypes.util.find_library("lbknn")
    if system:
        found.append(system)
    return found


def _major():
    try:
        from ._version import __version__

        return __version__.split(".")[0]
    except ImportError:
        return "0"


_LOG_FN = ctypes.CFUNCTYPE(None, _c_void_p, _c_int, ctypes.c_char_p)


@_LOG_FN
def _on_log(user, level, message):
    # Errors are raised as exceptions with the same text; only warnings
    # and information would otherwise be lost.
    text = _text(message)
    if level == 1:
        _log.warning("%s", text)
    elif level == 2:
        _log.info("%s", text)
    else:
        _log.debug("%s", text)


def _declare(lib):
    P = ctypes.POINTER
    sigs = {
        "lbknn_version": (ctypes.c_char_p, []),
        "lbknn_build_info": (ctypes.c_char_p, []),
        "lbknn_status_string": (ctypes.c_char_p, [_c_int]),
        "lbknn_set_log_callback": (None, [_LOG_FN, _c_void_p]),
        "lbknn_options_create": (_c_int, [P(_c_void_p)]),
        "lbknn_options_set": (_c_int, [_c_void_p, ctypes.c_char_p, ctypes.c_char_p]),
        "lbknn_options_error": (ctypes.c_char_p, [_c_void_p]),
        "lbknn_options_destroy": (None, [_c_void_p]),
        "lbknn_context_create": (
            _c_int,
            [_c_void_p, _c_void_p, P(_c_void_p), ctypes.c_char_p, ctypes.c_size_t],
        ),
        "lbknn_context_set_program_cache": (_c_int, [_c_void_p, ctypes.c_char_p]),
        "lbknn_context_rank": (_c_int, [_c_void_p]),
        "lbknn_context_size": (_c_int, [_c_void_p]),
        "lbknn_context_device": (ctypes.c_char_p, [_c_void_p]),
        "lbknn_context_error": (ctypes.c_char_p, [_c_void_p]),
        "lbknn_context_destroy": (None, [_c_void_p]),
        "lbknn_index_build": (
            _c_int,
            [_c_void_p, _c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_void_p, _c_void_p,
             P(_c_void_p)],
        ),
        "lbknn_index_build_typed": (
            _c_int,
            [_c_void_p, _c_void_p, ctypes.c_int64, _c_int, _c_int, _c_void_p, _c_void_p,
             _c_void_p, P(_c_void_p)],
        ),
        "lbknn_index_dtype": (_c_int, [_c_void_p]),
        "lbknn_index_rows": (ctypes.c_int64, [_c_void_p]),
        "lbknn_index_dim": (_c_int, [_c_void_p]),
        "lbknn_index_classes": (ctypes.c_int32, [_c_void_p]),
        "lbknn_index_has_targets": (_c_int, [_c_void_p]),
        "lbknn_index_engine": (ctypes.c_char_p, [_c_void_p]),
        "lbknn_index_partition": (ctypes.c_char_p, [_c_void_p]),
        "lbknn_index_error": (ctypes.c_char_p, [_c_void_p]),
        "lbknn_index_destroy": (None, [_c_void_p]),
        "lbknn_index_search": (
            _c_int, [_c_void_p, ctypes.c_int64, _c_void_p, _c_int, _c_void_p, _c_void_p]),
        "lbknn_index_search_typed": (
            _c_int, [_c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_int, _c_void_p, _c_void_p]),
        "lbknn_index_search_self": (_c_int, [_c_void_p, _c_int, _c_void_p, _c_void_p]),
        "lbknn_index_classify": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_void_p, _c_int, _c_int, ctypes.c_double, _c_void_p,
             _c_void_p],
        ),
        "lbknn_index_regress": (
            _c_int, [_c_void_p, ctypes.c_int64, _c_void_p, _c_int, _c_int, _c_void_p]),
        "lbknn_index_classify_typed": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_int, _c_int, ctypes.c_double,
             _c_void_p, _c_void_p],
        ),
        "lbknn_index_regress_typed": (
            _c_int, [_c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_int, _c_int, _c_void_p]),
        # Radius searches: (index, [queries, points,] radii, radius, options, result).
        "lbknn_index_radius": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_void_p, _c_void_p, ctypes.c_float, _c_void_p,
             P(_c_void_p)]),
        "lbknn_index_radius_typed": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_void_p, ctypes.c_float, _c_void_p,
             P(_c_void_p)]),
        "lbknn_index_radius_classify_typed": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_void_p, ctypes.c_float, _c_int,
             ctypes.c_double, ctypes.c_int32, _c_void_p, _c_void_p]),
        "lbknn_index_radius_regress_typed": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_int, _c_void_p, _c_void_p, ctypes.c_float, _c_int,
             _c_void_p, P(ctypes.c_int64)]),
        "lbknn_index_radius_self": (
            _c_int, [_c_void_p, _c_void_p, ctypes.c_float, _c_void_p, P(_c_void_p)]),
        "lbknn_radius_result_queries": (ctypes.c_int64, [_c_void_p]),
        "lbknn_radius_result_indptr": (P(ctypes.c_int64), [_c_void_p]),
        "lbknn_radius_result_indices": (P(ctypes.c_int64), [_c_void_p]),
        "lbknn_radius_result_distances": (P(ctypes.c_float), [_c_void_p]),
        "lbknn_radius_result_free": (None, [_c_void_p]),
        "lbknn_index_radius_classify": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_void_p, _c_void_p, ctypes.c_float, _c_int,
             ctypes.c_double, ctypes.c_int32, _c_void_p, _c_void_p]),
        "lbknn_index_radius_regress": (
            _c_int,
            [_c_void_p, ctypes.c_int64, _c_void_p, _c_void_p, ctypes.c_float, _c_int, _c_void_p,
             P(ctypes.c_int64)]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return list(sigs)


class _Serialized:
    """The library's functions, each called under _lock."""

    def __init__(self, handle, names):
        self._name = handle._name
        for name in names:
            setattr(self, name, self._locked(getattr(handle, name)))

    @staticmethod
    def _locked(fn):
        def call(*args):
            with _lock:
                return fn(*args)

        return call


def lib():
    """The loaded library (loading it on the first call)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in library_candidates():
            if os.path.isabs(path) and not os.path.exists(path):
                tried.append(f"{path} (missing)")
                continue
            try:
                # RTLD_GLOBAL: the plugins Open MPI opens later resolve
                # their symbols against the libmpi loaded with the library.
                handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            serialized = _Serialized(handle, _declare(handle))
            serialized.lbknn_set_log_callback(_on_log, None)
            _lib = serialized
            atexit.register(_shutdown)
            return _lib
        raise OSError(
            "lbknn: cannot load the shared library liblbknn: tried "
            + ("; ".join(tried) if tried else "nothing (no candidate found)")
            + ". Set LBKNN_LIBRARY to the path of liblbknn.so, or build lbknn "
            "and use PYTHONPATH=<build>/python."
        )


def library_path():
    """The file the library was loaded from (loading it)."""
    handle = lib()
    return handle._name


def version():
    """The library's version string, e.g. "0.2.0"."""
    return _text(lib().lbknn_version())


def build_info():
    """What the loaded library is and runs with, as `lbknn --version` says
    it: a dict of version, commit ("release" outside a git checkout),
    build_type, compiler, and the opencl, mpi and hdf5 libraries found at
    run time, plus library (the file loaded)."""
    info = {}
    for line in _text(lib().lbknn_build_info()).splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            info[key] = value
    info["library"] = library_path()
    return info


def status_string(status):
    return _text(lib().lbknn_status_string(status))


class Options:
    """lbknn_options: the job file's keys, set by name."""

    def __init__(self):
        self._lib = lib()
        self._h = _c_void_p()
        status = self._lib.lbknn_options_create(ctypes.byref(self._h))
        if status != OK:
            _raise(status, "cannot create options")

    def set(self, key, value):
        with _lock:
            status = self._lib.lbknn_options_set(self._h, key.encode(), str(value).encode())
            if status != OK:
                _raise(status, _text(self._lib.lbknn_options_error(self._h)))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and not _shut_down:
            self._lib.lbknn_options_destroy(h)


def program_cache_dir():
    """Where `lbknn run` keeps built kernels ($XDG_CACHE_HOME/lbknn/programs,
    else ~/.cache/lbknn/programs): shared with it, so that a fit skips the
    kernel compiler once either has built them. None without a home."""
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.path.join(os.environ["HOME"], ".cache") if os.environ.get("HOME") else None)
    return os.path.join(base, "lbknn", "programs") if base else None


class Context:
    """lbknn_context: this process's device and the ranks of a communicator;
    `threads` is device.threads (a CPU device's compute units, 0 = all)."""

    def __init__(self, device, comm, threads=0):
        self._lib = lib()
        self._h = _c_void_p()
        self.comm = comm
        address = None
        if comm is not None:
            from mpi4py import MPI

            address = _c_void_p(MPI._addressof(comm))
        options = Options()
        options.set("device.type", device)
        options.set("device.threads", threads)
        error = ctypes.create_string_buffer(1024)
        status = self._lib.lbknn_context_create(
            options._h, address, ctypes.byref(self._h), error, len(error))
        if status != OK:
            self._h = None
            _raise(status, _text(error.value))
        cache = program_cache_dir()
        if cache:
            status = self._lib.lbknn_context_set_program_cache(self._h, cache.encode())
            if status != OK:
                _raise(status, self.error())
        self.rank = self._lib.lbknn_context_rank(self._h)
        self.size = self._lib.lbknn_context_size(self._h)
        self.device = _text(self._lib.lbknn_context_device(self._h))

    def error(self):
        return _text(self._lib.lbknn_context_error(self._h))

    def destroy(self):
        h, self._h = self._h, None
        if h:
            self._lib.lbknn_context_destroy(h)


# Creating a context opens an OpenCL device, far too slow to repeat on
# every fit: one per (device type, communicator, threads), kept until exit.
# The communicator is kept by reference, so its id is not reused meanwhile.
_contexts = {}
_indexes = weakref.WeakSet()
_shut_down = False
_atexit_registered = False


def context(device, comm, threads=0):
    global _atexit_registered
    key = (device, None if comm is None else id(comm), threads)
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            if comm is not None and not _atexit_registered:
                # Again, now that mpi4py is imported, so that it runs before
                # mpi4py finalizes MPI (atexit runs the last registered
                # first); if it runs after all, it leaves the handles alone.
                atexit.register(_shutdown)
                _atexit_registered = True
            ctx = Context(device, comm, threads)
            _contexts[key] = ctx
        return ctx


def _shutdown():
    # The handles hold MPI communicators, freed only while MPI lives.
    global _shut_down
    import sys

    if _shut_down:
        return
    mpi = sys.modules.get("mpi4py.MPI")
    alive = mpi is None or not mpi.Is_finalized()
    with _lock:
        if alive:
            for index in list(_indexes):
                index.destroy()
            for ctx in _contexts.values():
                ctx.destroy()
        _contexts.clear()
        # Nothing may call into the interpreter once it is going away.
        _lib.lbknn_set_log_callback(_LOG_FN(), None)
        _shut_down = True


def _ptr(a):
    return None if a is None else a.ctypes.data_as(_c_void_p)


class Index:
    """lbknn_index: reference points on the context's ranks, searchable
    with any k up to `k`. `points` float32, uint8, int8 or float16 (any
    other type becomes float32), C order; `labels` int32; `targets`
    float64 (this rank's rows). `reference_type` is the option
    reference.type: 'auto' keeps a compact type where lbknn would,
    'float32' widens, the points' type keeps them compact (lbknn.h,
    lbknn_index_build_typed). Queries are of the points' type or float32
    (another type becomes float32)."""

    def __init__(self, ctx, points, k, metric, engine, labels=None, targets=None,
                 reference_type="auto"):
        self._lib = lib()
        self._h = None
        self.ctx = ctx
        self.k = int(k)
        options = Options()
        options.set("knn.k", self.k)
        options.set("knn.metric", metric)
        options.set("knn.engine", engine)
        options.set("reference.type", reference_type)
        points, code = typed_rows(points)
        self.points_dtype = points.dtype
        labels = None if labels is None else _c_rows(labels, np.int32)
        targets = None if targets is None else _c_rows(targets, np.float64)
        h = _c_void_p()
        with _lock:
            status = self._lib.lbknn_index_build_typed(
                ctx._h, options._h, points.shape[0], points.shape[1], code, _ptr(points),
                _ptr(labels), _ptr(targets), ctypes.byref(h))
            if status != OK:
                _raise(status, ctx.error())
        self._h = h
        _indexes.add(self)
        self.rows = int(self._lib.lbknn_index_rows(h))
        self.dim = int(self._lib.lbknn_index_dim(h))
        self.classes = int(self._lib.lbknn_index_classes(h))
        self.engine = _text(self._lib.lbknn_index_engine(h))
        self.partition = _text(self._lib.lbknn_index_partition(h))

    def dtype(self):
        """The type the index keeps its points at now ('uint8', ...,
        'float32' where they were widened)."""
        return _DTYPE_NAMES[int(self._lib.lbknn_index_dtype(self._h))]

    def _queries(self, queries):
        """(rows, lbknn_dtype): the points' type kept, anything else float32."""
        q = np.asarray(queries)
        if q.dtype != self.points_dtype:
            return _c_rows(q, np.float32), 0
        return typed_rows(q)

    def _call(self, fn, *args):
        with _lock:
            status = fn(self._h, *args)
            if status != OK:
                _raise(status, _text(self._lib.lbknn_index_error(self._h)))

    def search(self, queries, k, distances=True):
        queries, code = self._queries(queries)
        n = queries.shape[0]
        ids = np.empty((n, k), dtype=np.int64)
        dist = np.empty((n, k), dtype=np.float32) if distances else None
        self._call(self._lib.lbknn_index_search_typed, n, code, _ptr(queries), k, _ptr(ids),
                   _ptr(dist))
        return ids, dist

    def search_self(self, k, rows, distances=True):
        """Each of this rank's `rows` points' k nearest other points (the
        rows it passed to the build), in global order."""
        ids = np.empty((rows, k), dtype=np.int64)
        dist = np.empty((rows, k), dtype=np.float32) if distances else None
        self._call(self._lib.lbknn_index_search_self, k, _ptr(ids), _ptr(dist))
        return ids, dist

    def classify(self, queries, k, weights, temperature, probabilities=True):
        queries, code = self._queries(queries)
        n = queries.shape[0]
        labels = np.empty(n, dtype=np.int32)
        proba = np.empty((n, self.classes), dtype=np.float64) if probabilities else None
        self._call(self._lib.lbknn_index_classify_typed, n, code, _ptr(queries), k,
                   WEIGHTS[weights],
                   float(temperature), _ptr(labels), _ptr(proba))
        return labels, proba

    def regress(self, queries, k, weights):
        queries, code = self._queries(queries)
        n = queries.shape[0]
        values = np.empty(n, dtype=np.float64)
        self._call(self._lib.lbknn_index_regress_typed, n, code, _ptr(queries), k,
                   WEIGHTS[weights], _ptr(values))
        return values

    # ---- radius searches: `radius` (a float) for every query, or `radii`
    # (float32, one per query) ----

    def _radius_result(self, fn, *args):
        """A radius result's CSR arrays (indptr, indices, float32 distances),
        copied out of the library's result, which is freed."""
        result = _c_void_p()
        with _lock:
            status = fn(self._h, *args, None, ctypes.byref(result))
            if status != OK:
                _raise(status, _text(self._lib.lbknn_index_error(self._h)))
        try:
            n = int(self._lib.lbknn_radius_result_queries(result))
            indptr = _copy_out(self._lib.lbknn_radius_result_indptr(result), n + 1, np.int64)
            nnz = int(indptr[-1])
            indices = _copy_out(self._lib.lbknn_radius_result_indices(result), nnz, np.int64)
            dist = _copy_out(self._lib.lbknn_radius_result_distances(result), nnz, np.float32)
        finally:
            self._lib.lbknn_radius_result_free(result)
        return indptr, indices, dist

    def radius(self, queries, radius, radii=None):
        queries, code = self._queries(queries)
        radii = None if radii is None else _c_rows(radii, np.float32)
        return self._radius_result(self._lib.lbknn_index_radius_typed, queries.shape[0], code,
                                   _ptr(queries), _ptr(radii), float(radius))

    def radius_self(self, radius, radii=None):
        """Each of this rank's points' neighbours within the radius, itself
        left out (the rows it passed to the build, in global order)."""
        radii = None if radii is None else _c_rows(radii, np.float32)
        return self._radius_result(self._lib.lbknn_index_radius_self, _ptr(radii),
                                   float(radius))

    def radius_classify(self, queries, radius, radii, weights, outlier, probabilities=True):
        """The vote of every neighbour within the radius; `outlier` is the
        label of a query with none (-1: none, the label -1)."""
        queries, code = self._queries(queries)
        radii = None if radii is None else _c_rows(radii, np.float32)
        n = queries.shape[0]
        labels = np.empty(n, dtype=np.int32)
        proba = np.empty((n, self.classes), dtype=np.float64) if probabilities else None
        self._call(self._lib.lbknn_index_radius_classify_typed, n, code, _ptr(queries),
                   _ptr(radii),
                   float(radius), WEIGHTS[weights], 1.0, int(outlier), _ptr(labels),
                   _ptr(proba))
        return labels, proba

    def radius_regress(self, queries, radius, radii, weights):
        """The mean target of every neighbour within the radius (NaN: none)
        and how many queries had none."""
        queries, code = self._queries(queries)
        radii = None if radii is None else _c_rows(radii, np.float32)
        n = queries.shape[0]
        values = np.empty(n, dtype=np.float64)
        empty = ctypes.c_int64(0)
        self._call(self._lib.lbknn_index_radius_regress_typed, n, code, _ptr(queries),
                   _ptr(radii),
                   float(radius), WEIGHTS[weights], _ptr(values), ctypes.byref(empty))
        return values, int(empty.value)

    def destroy(self):
        h, self._h = self._h, None
        if h:
            self._lib.lbknn_index_destroy(h)

    def __del__(self):
        if not _shut_down:
            self.destroy()


def _copy_out(pointer, n, dtype):
    """n values the library owns, copied (a NULL pointer is fine for 0)."""
    if n == 0:
        return np.empty(0, dtype=dtype)
    return np.ctypeslib.as_array(pointer, shape=(n,)).astype(dtype, copy=True)


def _c_rows(a, dtype):
    # The library reads rows in C order: anything else would be misread.
    return np.ascontiguousarray(a, dtype=dtype)


def typed_rows(a):
    """(rows in C order, lbknn_dtype): uint8, int8 and float16 as they
    are, anything else as float32."""
    a = np.asarray(a)
    if a.dtype in DTYPES:
        a = np.ascontiguousarray(a)
        return a, DTYPES[a.dtype]
    return _c_rows(a, np.float32), 0
