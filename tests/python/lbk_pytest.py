"""Shared by the Python tests: skipping where a dependency is missing
(exit 77, CTest's SKIP_RETURN_CODE), checks that print what differs, and
the seed of every random draw.

Run with /usr/bin/python3 and PYTHONPATH=<build>/python (CMake does both)."""
import os
import sys

SKIP = 77


def require(*modules):
    """Exit 77 (skipped) when one of the modules cannot be imported: the
    tests need NumPy, scikit-learn (and mpi4py for the MPI test), which
    are Debian packages (python3-sklearn, python3-mpi4py)."""
    for name in modules:
        try:
            __import__(name)
        except ImportError as e:
            print(f"SKIP: {name} cannot be imported ({e}); install the Debian package")
            sys.exit(SKIP)


require("numpy", "sklearn")
import numpy as np  # noqa: E402

failures = []
checked = 0


def check(ok, what):
    """Record a failed expectation (and go on, so that one run shows all)."""
    global checked
    checked += 1
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)
    return ok


def rng(seed=None):
    """A seeded generator; the seed is printed so that a failure replays
    (LBK_TEST_SEED overrides it)."""
    seed = int(os.environ.get("LBK_TEST_SEED", seed if seed is not None else 12345))
    print(f"seed {seed}", flush=True)
    return np.random.default_rng(seed)


def expect_raises(kind, fn, match=None, what=""):
    """fn() must raise `kind` (whose message contains `match`); returns the exception."""
    try:
        fn()
    except kind as e:
        check(match is None or match in str(e),
              f"{what}: {kind.__name__} message {str(e)!r} lacks {match!r}")
        return e
    except Exception as e:  # noqa: BLE001 - any other kind is the failure reported
        check(False, f"{what}: raised {type(e).__name__}({e}) instead of {kind.__name__}")
        return e
    check(False, f"{what}: no {kind.__name__} raised")
    return None


def finish():
    """Exit 1 if an expectation failed, or if nothing was checked."""
    if not checked:
        print("FAIL: nothing was checked")
        sys.exit(1)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print(f"ok: {checked} checks")
    sys.exit(0)
