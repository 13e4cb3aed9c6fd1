"""What SciPy, NumPy, zipfile and unzip make of a graph .npz that lbknn's
writer made (src/io/graph_npz.h).

check_graph_npz.py PROGRAM FILE MODE N R INDEX_SIZE SLICES SEED

PROGRAM (graph_npz_test) writes FILE: the graph of N points, R neighbours a
row, indices and indptr of INDEX_SIZE bytes, in SLICES slices written in a
shuffled order (SEED). Row i's entry j is computed here again from the same
formula (graph_entry in graph_npz_test.c), not read from the C side.

MODE scipy: scipy.sparse.load_npz reads the matrix, every member holds the
bytes numpy.lib.format.write_array writes for its array (for int32 indices,
those scipy.sparse.save_npz(compressed=False) writes, in SciPy's member
order), and zipfile's testzip finds every CRC right.
MODE unzip: `unzip -t` accepts the file (skipped, 77, without unzip).
"""
import io
import shutil
import subprocess
import sys
import zipfile

import numpy as np

MEMBERS = ["indices.npy", "indptr.npy", "format.npy", "shape.npy", "data.npy"]
M64 = (1 << 64) - 1


def mix64(x):
    """splitmix64's first draw from seed x (lbk_test_mix64)."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def expected_arrays(n, r, index_dtype):
    ids = np.empty(n * r, dtype=index_dtype)
    distances = np.empty(n * r, dtype=np.float32)
    for i in range(n):
        for j in range(r):
            h = mix64(i << 20 | j)
            ids[i * r + j] = (i + 1 + h % (n - 1)) % n
            distances[i * r + j] = np.float32((h >> 40) / float(1 << 24))
    indptr = np.arange(n + 1, dtype=index_dtype) * r
    return {
        "indices.npy": ids,
        "indptr.npy": indptr,
        "format.npy": np.array(b"csr", dtype="|S3"),
        "shape.npy": np.array([n, n], dtype="<i8"),
        "data.npy": distances,
    }


def npy_bytes(array):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    return buf.getvalue()


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def check_zip(path, want):
    with zipfile.ZipFile(path) as z:
        if z.namelist() != MEMBERS:
            fail(f"members {z.namelist()}, want {MEMBERS}")
        bad = z.testzip()
        if bad is not None:
            fail(f"testzip: {bad}'s CRC is wrong")
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                fail(f"{info.filename} is compressed ({info.compress_type})")
            got = z.read(info.filename)
            if got != npy_bytes(want[info.filename]):
                fail(f"{info.filename}: not the bytes numpy writes for it")
    print(f"zipfile: {MEMBERS} stored, CRCs right, each as numpy writes it")


def check_scipy_bytes(path, want, n):
    """For int32 indices: member for member what save_npz writes."""
    import scipy.sparse

    m = scipy.sparse.csr_matrix(
        (want["data.npy"], want["indices.npy"], want["indptr.npy"]), shape=(n, n)
    )
    if m.indices.dtype != np.int32 or m.indptr.dtype != np.int32:
        fail(f"scipy chose {m.indices.dtype} indices for this matrix; the test expects int32")
    buf = io.BytesIO()
    scipy.sparse.save_npz(buf, m, compressed=False)
    with zipfile.ZipFile(buf) as theirs, zipfile.ZipFile(path) as ours:
        if theirs.namelist() != ours.namelist():
            fail(f"members {ours.namelist()}, save_npz writes {theirs.namelist()}")
        for name in MEMBERS:
            if theirs.read(name) != ours.read(name):
                fail(f"{name}: not the bytes save_npz writes")
    print("scipy.sparse.save_npz(compressed=False) writes the same members")


def check_load(path, want, n, r, index_dtype):
    import scipy.sparse

    m = scipy.sparse.load_npz(path)
    if m.format != "csr" or m.shape != (n, n) or m.nnz != n * r:
        fail(f"load_npz: {m.format} {m.shape} with {m.nnz} entries")
    if m.data.dtype != np.float32:
        fail(f"data dtype {m.data.dtype}")
    if not np.array_equal(m.data.view(np.uint32), want["data.npy"].view(np.uint32)):
        fail("data (distances) differ")
    if not np.array_equal(m.indices, want["indices.npy"]):
        fail("indices (neighbour ids) differ")
    if not np.array_equal(m.indptr, want["indptr.npy"]):
        fail("indptr differs")
    # load_npz narrows int64 indices whose values fit int32 (SciPy's
    # check_contents); the file's own dtype is what np.load reads.
    with np.load(path) as raw:
        for name in ("indices", "indptr"):
            if raw[name].dtype != index_dtype:
                fail(f"{name} dtype {raw[name].dtype}, want {np.dtype(index_dtype)}")
    print(f"load_npz: csr {m.shape}, {m.nnz} entries, indices {np.dtype(index_dtype)} as written")


def main():
    program, path, mode = sys.argv[1:4]
    n, r, index_size, slices, seed = (int(a) for a in sys.argv[4:9])
    if mode == "unzip" and shutil.which("unzip") is None:
        print("skip: no unzip")
        sys.exit(77)
    subprocess.run(
        [program, "write", path, str(n), str(r), str(index_size), str(slices), str(seed)],
        check=True,
    )
    if mode == "unzip":
        out = subprocess.run(["unzip", "-t", path], capture_output=True, text=True)
        print(out.stdout, out.stderr)
        if out.returncode != 0 or "No errors detected" not in out.stdout:
            fail(f"unzip -t exited {out.returncode}")
        return
    index_dtype = "<i8" if index_size == 8 else "<i4"
    want = expected_arrays(n, r, index_dtype)
    check_zip(path, want)
    if index_size == 4:
        check_scipy_bytes(path, want, n)
    check_load(path, want, n, r, index_dtype)


if __name__ == "__main__":
    main()
