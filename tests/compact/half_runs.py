#!/usr/bin/python3
"""float16 reference points through whole runs, kept compact.

    half_runs.py LBKNN MPIEXEC

Writes a float16 set (.npy <f2: values of many scales, a zero row, repeated
rows) and float32 queries, some equal to reference rows. For l2, ip and
cosine it runs `lbknn run` (brute force, row shards, reference.type auto)
and checks that
  - the points stayed compact (no "widened" line) and the outputs are
    byte-identical to the run with reference.type: float32 on the same file
    (the float32 path, cosine's rows normalised on read); cosine on 2 ranks too;
  - every query's K ids are an oracle's here: each key summed in float32 in
    the kernels' order (j ascending, no fused multiply-add), on the rows
    widened exactly (cosine: normalised as docs/design.md defines it), ties
    by id;
  - the report's peak device bytes are below the float32 run's.
"""
import os
import re
import sys
import tempfile

import numpy as np

from compact_common import fail, run

N, NQ, DIM, K = 900, 31, 40, 7
SEED = 4242


def normalise(x):
    """Per row: the sum of squares in double (j ascending), its square root,
    each value divided by it in double and rounded to float32; zero rows stay."""
    x64 = x.astype(np.float64)
    s = np.zeros(len(x), dtype=np.float64)
    for j in range(x.shape[1]):
        s = s + x64[:, j] * x64[:, j]
    n = np.sqrt(s)
    out = x.astype(np.float32).copy()
    nz = n != 0
    out[nz] = (x64[nz] / n[nz, None]).astype(np.float32)
    return out


def oracle_ids(ref, q, metric):
    ids = np.empty((len(q), K), dtype=np.int64)
    for i, v in enumerate(q):
        s = np.zeros(len(ref), dtype=np.float32)
        for j in range(ref.shape[1]):
            if metric == "l2":
                d = np.float32(v[j]) - ref[:, j]
                s = s + d * d
            else:
                s = s + np.float32(v[j]) * ref[:, j]
        key = s if metric == "l2" else -s
        ids[i] = np.lexsort((np.arange(len(ref)), key))[:K]
    return ids


def run_bytes(lbknn, mpiexec, np_, job, out, sets):
    """One run's output bytes, stderr and largest per-rank peak device bytes."""
    ids, dist, report, err = run(lbknn, mpiexec, np_, job, out, sets, False)
    dev = [int(v) for v in re.findall(r"peak_device_bytes: (\d+)", report)]
    return ids + dist, err, max(dev) if dev else None


def main():
    lbknn, mpiexec = sys.argv[1], sys.argv[2]
    print("seed", SEED)
    rng = np.random.default_rng(SEED)
    scale = np.where(np.arange(DIM) % 8 < 4, 30.0, 0.02)
    ref = (rng.standard_normal((N, DIM)) * scale).astype(np.float16)
    ref[7] = 0
    ref[10::11] = ref[rng.integers(0, 10, len(ref[10::11]))]
    q = (rng.standard_normal((NQ, DIM)) * scale).astype(np.float32)
    q[::5] = ref[np.arange(0, NQ, 5) * 17 % N].astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "ref.npy"), ref)
        np.save(os.path.join(d, "q.npy"), q)
        job = os.path.join(d, "job.yaml")
        with open(job, "w") as f:
            f.write("task: search\nreference:\n  path: ref.npy\nquery:\n  path: q.npy\n"
                    "knn:\n  k: %d\n  engine: brute\nmpi:\n  partition: shard\n" % K)
        wide = ref.astype(np.float32)
        for m in ("l2", "ip", "cosine"):
            base = os.path.join(d, m)
            want, err, dev32 = run_bytes(lbknn, mpiexec, 1, job, base + "_f32",
                                   ["knn.metric=" + m, "reference.type=float32"])
            got, err, dev16 = run_bytes(lbknn, mpiexec, 1, job, base + "_f16", ["knn.metric=" + m])
            if "widened" in err:
                fail("%s: the float16 points were widened: %s" % (m, err))
            if got != want:
                fail("%s: float16 outputs differ from the float32 run's" % m)
            if not (dev16 and dev32 and dev16 < dev32):
                fail("%s: peak device bytes %s (float16), %s (float32)" % (m, dev16, dev32))
            ranks = "1 rank"
            if m == "cosine":
                ranks = "1 and 2 ranks"
                got2, _, _ = run_bytes(lbknn, mpiexec, 2, job, base + "_f16_p2", ["knn.metric=" + m])
            if m == "cosine" and got2 != want:
                fail("%s: float16 outputs on 2 ranks differ from the float32 run's" % m)
            r, qq = (normalise(wide), normalise(q)) if m == "cosine" else (wide, q)
            ids = np.frombuffer(got[:NQ * (K + 1) * 4], dtype="<i4").reshape(NQ, K + 1)[:, 1:]
            bad = np.nonzero((ids != oracle_ids(r, qq, m)).any(axis=1))[0]
            if len(bad):
                fail("%s: query %d ids %s, oracle %s" % (m, bad[0], ids[bad[0]],
                                                         oracle_ids(r, qq, m)[bad[0]]))
            print("ok  %s: float16 == float32 run (%s), oracle ids; device bytes %d vs %d"
                  % (m, ranks, dev16, dev32))


if __name__ == "__main__":
    main()
