"""What the compact-points scripts (compact_runs.py, compact_tree.py,
half_runs.py) share: the big-ann writer, the .ivecs/.fvecs reader, and one
`lbknn run` of a job with its outputs read back."""
import subprocess
import sys

import numpy as np


def write_bin(path, x, dtype):
    """big-ann-benchmarks layout: rows and dim as uint32, then the values."""
    with open(path, "wb") as f:
        f.write(np.array(x.shape, dtype="<u4").tobytes())
        f.write(x.astype(dtype).tobytes())


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype="<i4")
    return raw.reshape(-1, raw[0] + 1)[:, 1:].copy().view(dtype)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(lbknn, mpiexec, np_, job, out, sets, compact):
    """`lbknn run job` on np_ ranks with `sets` (key=value), its neighbours,
    distances and report at out.*; fails on a non-zero exit, and where
    `compact` on a "widened" line. Returns (ids bytes, distances bytes,
    report text, stderr)."""
    cmd = [lbknn, "run", job, "--set", "output.neighbors=" + out + ".ivecs",
           "--set", "output.distances=" + out + ".fvecs", "--set", "output.report=" + out + ".yaml"]
    for s in sets:
        cmd += ["--set", s]
    if np_ > 1:
        cmd = [mpiexec, "-n", str(np_)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    if compact and "widened" in p.stderr:
        fail("the points were widened: " + p.stderr)
    with open(out + ".ivecs", "rb") as f:
        ids = f.read()
    with open(out + ".fvecs", "rb") as f:
        dist = f.read()
    with open(out + ".yaml") as f:
        report = f.read()
    return ids, dist, report, p.stderr
