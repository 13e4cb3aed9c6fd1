#!/usr/bin/python3
"""HDF5 inputs and outputs, ground truth and float16 .npy, against oracles of
their own: files made by h5py and NumPy, answers computed by NumPy brute
force here (never by lbknn), outputs read back with h5py.

usage: hdf5_test.py CASE LBKNN MPIEXEC
Cases: see CASES at the end. Each prints its seed; exits 0 (pass) or 1."""
import os
import re
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SEED = 20261202
K = 10


def run(lbknn, args, mpiexec=None, ranks=1, expect_ok=True):
    cmd = [lbknn, "run", "-q"] + args
    if ranks > 1:
        cmd = [mpiexec, "-n", str(ranks)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    if expect_ok and p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    return p


def brute(ref, queries, k):
    """Exact L2 neighbours in float64 of the float32 rows, ties by id."""
    r = ref.astype(np.float64)
    q = queries.astype(np.float64)
    d2 = ((q[:, None, :] - r[None, :, :]) ** 2).sum(-1)
    ids = np.argsort(d2, axis=1, kind="stable")[:, :k]
    return ids, np.sqrt(np.take_along_axis(d2, ids, 1))


def write_ann(path, train, test, k, ids_dtype=np.int32, extra_cols=0):
    """An ann-benchmarks-layout file with its exact ground truth."""
    ids, dist = brute(train.astype(np.float32), test.astype(np.float32), k + extra_cols)
    with h5py.File(path, "w") as f:
        f["train"] = train
        f["test"] = test
        f["neighbors"] = ids.astype(ids_dtype)
        f["distances"] = dist
    return ids[:, :k], dist[:, :k]


def job(tmp, ref="train", query="test", extra=""):
    path = os.path.join(tmp, "job.yaml")
    with open(path, "w") as f:
        f.write(f"task: search\nreference: {{path: ann.hdf5, dataset: {ref}}}\n"
                f"query: {{path: ann.hdf5, dataset: {query}}}\nknn: {{k: {K}}}\n{extra}")
    return path


def data(rng, n=600, q=40, d=6):
    return rng.random((n, d)), rng.random((q, d))


def check_outputs(tmp, want_ids, want_dist, prefix=""):
    with h5py.File(os.path.join(tmp, prefix + "n.hdf5"), "r") as f:
        ids = f["neighbors"]
        assert ids.dtype == np.int32, ids.dtype
        assert ids.shape == want_ids.shape, ids.shape
        assert (ids[:] == want_ids).all(), "neighbour ids differ from the NumPy oracle"
    with h5py.File(os.path.join(tmp, prefix + "d.h5"), "r") as f:
        dist = f["distances"]
        assert dist.dtype == np.float32, dist.dtype
        assert np.allclose(dist[:], want_dist, rtol=1e-5, atol=1e-6), "distances differ"


def outputs_args(tmp, prefix=""):
    return ["--set", f"output.neighbors={tmp}/{prefix}n.hdf5",
            "--set", f"output.distances={tmp}/{prefix}d.h5"]


def case_float32(lbknn, mpiexec, tmp, rng):
    train, test = data(rng)
    write_ann(os.path.join(tmp, "ann.hdf5"), train.astype(np.float32), test.astype(np.float32), K)
    run(lbknn, [job(tmp)] + outputs_args(tmp))
    ids, dist = brute(train.astype(np.float32), test.astype(np.float32), K)
    check_outputs(tmp, ids, dist)


def case_float64(lbknn, mpiexec, tmp, rng):
    """float64 points are rounded to float32: the oracle rounds them too."""
    train, test = data(rng)
    write_ann(os.path.join(tmp, "ann.hdf5"), train, test, K)
    run(lbknn, [job(tmp)] + outputs_args(tmp))
    ids, dist = brute(train.astype(np.float32), test.astype(np.float32), K)
    check_outputs(tmp, ids, dist)


def case_missing_dataset(lbknn, mpiexec, tmp, rng):
    train, test = data(rng, 50, 5)
    write_ann(os.path.join(tmp, "ann.hdf5"), train, test, 3)
    p = run(lbknn, [job(tmp, ref="trian")], expect_ok=False)
    want = "no dataset 'trian' in this HDF5 file (it has: distances, neighbors, test, train)"
    assert p.returncode != 0 and want in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, "more than one error line:\n" + p.stderr
    p = run(lbknn, [job(tmp, ref='""')], expect_ok=False)
    assert p.returncode != 0 and "name the one to read with `dataset:`" in p.stderr, p.stderr
    # Integer points are read (compact or widened), but for 8-byte ones.
    write_ann(os.path.join(tmp, "ann.hdf5"), train, test, 3, ids_dtype=np.int64)
    p = run(lbknn, [job(tmp, ref="neighbors")], expect_ok=False)
    want = "points must be floats or integers of at most 4 bytes"
    assert p.returncode != 0 and want in p.stderr, p.stderr


def case_labels(lbknn, mpiexec, tmp, rng):
    """Labels from an int64 dataset; K = 1 predicts the nearest one's label."""
    train, test = data(rng)
    labels = rng.integers(0, 5, len(train)).astype(np.int64)
    path = os.path.join(tmp, "ann.hdf5")
    write_ann(path, train, test, 1)
    with h5py.File(path, "a") as f:
        f["train_labels"] = labels
    j = os.path.join(tmp, "job.yaml")
    with open(j, "w") as f:
        f.write("reference: {path: ann.hdf5, dataset: train, labels: ann.hdf5, "
                "labels_dataset: train_labels}\nquery: {path: ann.hdf5, dataset: test}\n"
                f"knn: {{k: 1}}\noutput: {{predictions: {tmp}/p.csv}}\n")
    run(lbknn, [j])
    ids, _ = brute(train.astype(np.float32), test.astype(np.float32), 1)
    got = np.loadtxt(os.path.join(tmp, "p.csv"), delimiter=",", skiprows=1, dtype=np.int64)
    assert (got[:, 1] == labels[ids[:, 0]]).all(), "predictions differ from the oracle"


def report_truth(path):
    text = open(path).read()
    m = re.search(r"^ground_truth: \{(.*)\}$", text, re.M)
    assert m, "no ground_truth line in the report"
    return {k: float(v) for k, v in re.findall(r"(\w+): ([0-9.]+)", m.group(1))}


def truth_args(tmp):
    return ["--set", "query.neighbors=" + os.path.join(tmp, "ann.hdf5"),
            "--set", "query.distances=" + os.path.join(tmp, "ann.hdf5"),
            "--set", f"output.report={tmp}/r.yaml"]


def case_truth_exact(lbknn, mpiexec, tmp, rng):
    """Ground truth = the exact answer (int64 ids, 20 columns for K = 10)."""
    train, test = data(rng)
    write_ann(os.path.join(tmp, "ann.hdf5"), train.astype(np.float32),
              test.astype(np.float32), K, ids_dtype=np.int64, extra_cols=10)
    run(lbknn, [job(tmp)] + truth_args(tmp))
    t = report_truth(os.path.join(tmp, "r.yaml"))
    assert t["evaluated"] == len(test), t
    assert t["ids_fraction"] == 1.0 and t["distances_fraction"] == 1.0, t


def case_truth_perturbed(lbknn, mpiexec, tmp, rng):
    """7 queries' ids and 5 other queries' distances changed: known fractions.
    Integer coordinates make every float32 distance exact."""
    train = rng.integers(0, 50, (600, 6)).astype(np.float32)
    test = rng.integers(0, 50, (40, 6)).astype(np.float32)
    path = os.path.join(tmp, "ann.hdf5")
    ids, dist = write_ann(path, train, test, K)
    # Distinct squared distances within every query's K + 1: no tie may swap.
    with h5py.File(path, "a") as f:
        n = f["neighbors"][:]
        d = f["distances"][:]
        for q in range(7):
            n[q, 4] = len(train) - 1 - n[q, 4]
        for q in range(7, 12):
            d[q, 9] = np.nextafter(np.float32(d[q, 9]), np.float32(np.inf))
        f["neighbors"][...] = n
        f["distances"][...] = d
    run(lbknn, [job(tmp)] + truth_args(tmp))
    t = report_truth(os.path.join(tmp, "r.yaml"))
    exact_ids = (brute(train, test, K)[0] == n[:, :K]).all(1).sum()
    assert t["ids_equal"] == exact_ids == 40 - 7, (t, exact_ids)
    assert t["distances_exact"] == 40 - 5, t
    # One float32 ulp is within the bound (truth.h): `equal` still counts them.
    assert t["distances_equal"] == 40, t


def case_truth_wrong_shape(lbknn, mpiexec, tmp, rng):
    train, test = data(rng, 50, 5)
    write_ann(os.path.join(tmp, "ann.hdf5"), train, test, 3)
    p = run(lbknn, [job(tmp)] + truth_args(tmp), expect_ok=False)
    want = "dataset 'neighbors' holds 3 neighbours per query, fewer than knn.k = 10"
    assert p.returncode != 0 and want in p.stderr, p.stderr


def case_ranks(lbknn, mpiexec, tmp, rng):
    """2 ranks (each reading its own rows: shard; and reduce_scatter, each
    writing its slices of the .hdf5 outputs) make the 1-rank files."""
    train, test = data(rng, 900, 57)
    write_ann(os.path.join(tmp, "ann.hdf5"), train, test, K)
    args = [job(tmp)] + truth_args(tmp)
    run(lbknn, args + outputs_args(tmp, "one-"))
    ids, dist = brute(train.astype(np.float32), test.astype(np.float32), K)
    check_outputs(tmp, ids, dist, "one-")
    for setting in ("mpi.partition=shard", "mpi.merge=reduce_scatter"):
        run(lbknn, args + outputs_args(tmp, "two-") + ["--set", setting], mpiexec, 2)
        for name in ("n.hdf5", "d.h5"):
            one = open(os.path.join(tmp, "one-" + name), "rb").read()
            two = open(os.path.join(tmp, "two-" + name), "rb").read()
            assert one == two, f"{setting}: {name} differs between 1 and 2 ranks"
        t = report_truth(os.path.join(tmp, "r.yaml"))
        assert t["evaluated"] == len(test) and t["ids_fraction"] == 1.0, (setting, t)


def case_float16_npy(lbknn, mpiexec, tmp, rng):
    """Every finite float16 as a reference point (dimension 1), and NumPy's
    own float32 of each as a query: each must find a point at distance 0,
    the one of its own bits (or, for -0 and +0, the other zero)."""
    bits = np.arange(65536, dtype=np.uint16)
    half = bits.view(np.float16)
    half = half[np.isfinite(half)].reshape(-1, 1)
    np.save(os.path.join(tmp, "ref.npy"), half)
    np.save(os.path.join(tmp, "q.npy"), half.astype(np.float32))
    j = os.path.join(tmp, "job.yaml")
    with open(j, "w") as f:
        f.write("task: search\nreference: {path: ref.npy}\nquery: {path: q.npy}\n"
                f"knn: {{k: 1, metric: l1}}\noutput: {{neighbors: {tmp}/n.npy, "
                f"distances: {tmp}/d.npy}}\n")
    run(lbknn, [j])
    ids = np.load(os.path.join(tmp, "n.npy"))[:, 0]
    dist = np.load(os.path.join(tmp, "d.npy"))[:, 0]
    assert (dist == 0).all(), f"{(dist != 0).sum()} float16 values read wrongly"
    same = half[ids, 0].astype(np.float32) == half[:, 0].astype(np.float32)
    assert same.all(), "a query found another value"


def exact_oracle(ref, q, k):
    """uint8/int8 rows: squared L2 in int64 (exact), ties by id; each
    distance the float32 square root of the float32 rounding of its key."""
    r = ref.astype(np.int64)
    ids = np.empty((len(q), k), np.int64)
    dist = np.empty((len(q), k), np.float32)
    for i, v in enumerate(q.astype(np.int64)):
        key = ((r - v) ** 2).sum(1)
        ids[i] = np.lexsort((np.arange(len(r)), key))[:k]
        dist[i] = np.sqrt(key[ids[i]].astype(np.float32), dtype=np.float32)
    return ids, dist


def device_bytes(path, field="peak_device_bytes"):
    """Each rank's `field` (peak_device_bytes) in the report, by rank."""
    text = open(path).read()
    return [int(v) for v in re.findall(field + r": (\d+)", text)]


def case_compact(lbknn, mpiexec, tmp, rng):
    """uint8, int8 and float16 datasets (h5py) read at their own width on 2
    ranks (each its rows' hyperslab) under reference.type auto, and queries
    of the same type (widened): the exact integer oracle (uint8, int8) or
    float64's (float16); uint8's bytes equal a float32 run's (the keys are
    below 2^24); the report's device bytes a compact shard's. Then int16
    widened exactly, int32 values float32 cannot hold refused, and a named
    type the dataset does not hold refused naming both."""
    n, nq, d = 600, 40, 12  # d < 16: auto keeps them compact on a CPU device too
    u8 = rng.integers(0, 256, (n, d)).astype(np.uint8)
    u8[5::9] = u8[3]  # equal rows: ties by id
    sets = {"uint8": (u8, rng.integers(0, 256, (nq, d)).astype(np.uint8)),
            "int8": (rng.integers(-128, 128, (n, d)).astype(np.int8),
                     rng.integers(-128, 128, (nq, d)).astype(np.int8)),
            "float16": (rng.standard_normal((n, d)).astype(np.float16),
                        rng.standard_normal((nq, d)).astype(np.float16))}
    i16 = rng.integers(-30000, 30000, (n, d)).astype(np.int16)
    with h5py.File(os.path.join(tmp, "ann.hdf5"), "w") as f:
        for t, (ref, q) in sets.items():
            f[t] = ref
            f[t + "_q"] = q
        f["int16"] = i16
        f["int32"] = np.full((n, d), (1 << 24) + 1, np.int32)
    out = lambda p: outputs_args(tmp, p) + ["--set", f"output.report={tmp}/{p}r.yaml"]
    run(lbknn, [job(tmp, "uint8", "uint8_q"), "--set", "reference.type=float32"] + out("f32-"),
        mpiexec, 2)
    wide = device_bytes(os.path.join(tmp, "f32-r.yaml"), "reference_device_bytes")
    for t, (ref, q) in sets.items():
        p = run(lbknn, [job(tmp, t, t + "_q")] + out(t + "-"), mpiexec, 2)
        assert "widened" not in p.stderr, p.stderr
        if t == "float16":
            ids, dist = brute(ref.astype(np.float32), q.astype(np.float32), K)
            check_outputs(tmp, ids, dist, t + "-")
        else:
            ids, dist = exact_oracle(ref, q, K)
            with h5py.File(os.path.join(tmp, t + "-d.h5"), "r") as f:
                assert (f["distances"][:].view(np.uint32) == dist.view(np.uint32)).all(), \
                    f"{t}: distances differ from the exact oracle"
            with h5py.File(os.path.join(tmp, t + "-n.hdf5"), "r") as f:
                assert (f["neighbors"][:] == ids).all(), f"{t}: ids differ from the exact oracle"
        narrow = device_bytes(os.path.join(tmp, t + "-r.yaml"), "reference_device_bytes")
        host = device_bytes(os.path.join(tmp, t + "-r.yaml"), "reference_host_bytes")
        # Each rank's shard: n / 2 rows of d values, 1 or 2 bytes instead of
        # 4; on the device laid out in blocks of rows (a few zero rows more).
        print(f"{t}: reference device bytes per rank {narrow}, float32 {wide}; host {host}")
        assert host == [n // 2 * d * ref.itemsize] * 2, f"{t}: host bytes {host}"
        assert len(narrow) == len(wide) == 2 and \
            all(c * 4 == w * ref.itemsize and c >= n // 2 * d * ref.itemsize
                for c, w in zip(narrow, wide)), \
            f"{t}: device bytes {narrow} are not a compact shard's (float32: {wide})"
        if t == "uint8":
            for name in ("n.hdf5", "d.h5"):
                a = open(os.path.join(tmp, "f32-" + name), "rb").read()
                assert a == open(os.path.join(tmp, "uint8-" + name), "rb").read(), name
    run(lbknn, [job(tmp, "int16", "int16")] + outputs_args(tmp, "i16-"))
    ids, dist = brute(i16.astype(np.float32), i16.astype(np.float32), K)
    check_outputs(tmp, ids, dist, "i16-")
    p = run(lbknn, [job(tmp, "int32", "int16")], expect_ok=False)
    want = "the integer 16777217 of dataset 'int32' is not exact in float32"
    assert p.returncode == 2 and want in p.stderr, p.stderr
    p = run(lbknn, [job(tmp, "int8", "int8_q"), "--set", "reference.type=uint8"],
            expect_ok=False)
    want = "reference.type is uint8, but the file's values read as int8"
    assert p.returncode == 2 and want in p.stderr, p.stderr


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    name, lbknn, mpiexec = sys.argv[1], sys.argv[2], sys.argv[3]
    print(f"hdf5_test {name}: seed {SEED}")
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory(prefix="lbk-hdf5.") as tmp:
        os.chdir(tmp)
        try:
            CASES[name](lbknn, mpiexec, tmp, rng)
        except AssertionError as e:
            sys.exit(f"FAIL {name}: {e}")
    print(f"PASS {name}")
