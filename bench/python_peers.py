#!/usr/bin/python3
"""Fashion-MNIST (60000 x 784 references, 10000 queries, K = 5) through
lbknn's Python estimator, side by side in one run with `lbknn run` on the
same files, FAISS IndexFlatL2 + a NumPy vote, and scikit-learn's
KNeighborsClassifier (brute force):

  - times: the estimator's fit + predict (data in memory; the process's
    first call, which opens the device, timed apart) against `lbknn run`'s total less its read phase (the
    report's), and against FAISS's add + search + vote; each contender in a
    process of its own (another library's idle threads spinning in the same
    process would cost it), medians of --rounds interleaved rounds;
  - predictions: the estimator's against `lbknn run`'s file (byte-identical
    text) and against scikit-learn's for uniform and distance weights, L2
    and L1 (scikit-learn's L1 brute force is slow: --l1-queries limits it).

    bash bench/python.sh [build]          (installs the peers, sets the BLAS)
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from fashion_peers import read_idx  # the IDX reader of the Fashion-MNIST peers


def vote(labels, classes=10):
    # majority, ties to the smallest label (scikit-learn's uniform weights)
    counts = np.zeros((labels.shape[0], classes), dtype=np.int64)
    for j in range(labels.shape[1]):
        np.add.at(counts, (np.arange(labels.shape[0]), labels[:, j]), 1)
    return np.argmax(counts, axis=1)


def report_phases(path):
    """The report's total (rank 0's wall time) and read phase (slowest rank)."""
    import yaml
    timings = yaml.safe_load(open(path))["timings_s"]
    return timings["total"], timings["read"]["max"]


def run_cli(build, config, out):
    report = os.path.join(out, "report.yaml")
    pred = os.path.join(out, "pred.csv")
    t0 = time.perf_counter()
    subprocess.run([os.path.join(build, "lbknn"), "run", config, "-q",
                    "--set", f"output.report={report}", "--set", f"output.predictions={pred}",
                    "--set", "output.neighbors=", "--set", "output.distances="], check=True)
    wall = time.perf_counter() - t0
    total, read = report_phases(report)
    return wall, total, read, pred


def load(d):
    xb = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float32)
    yb = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    xq = read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype(np.float32)
    yq = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    return xb, yb, xq, yq


def one(args):
    """One contender in a process of its own (no OpenMP or PoCL threads of
    another library left spinning in it); prints its seconds and writes
    its predictions to --out."""
    xb, yb, xq, _ = load(args.dir)
    opened = 0.0
    if args.one == "estimator":
        import lbknn
        # The process's first fit opens the device (and MPI) and loads the
        # kernels: timed apart, on a few rows, as a user's first call.
        t0 = time.perf_counter()
        lbknn.KNeighborsClassifier(n_neighbors=5, algorithm="brute").fit(xb[:50], yb[:50]).predict(
            xq[:5])
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = lbknn.KNeighborsClassifier(n_neighbors=5, algorithm="brute").fit(xb, yb).predict(xq)
    else:
        import faiss
        t0 = time.perf_counter()
        index = faiss.IndexFlatL2(xb.shape[1])
        index.add(xb)
        _, ids = index.search(xq, 5)
        pred = vote(yb[ids])
    seconds = time.perf_counter() - t0
    np.save(args.out, pred)
    print(opened, seconds)


def contender(args, who, out):
    path = os.path.join(out, f"{who}.npy")
    res = subprocess.run([sys.executable, __file__, "--one", who, "--out", path, "--dir", args.dir,
                          "--build", args.build], check=True, capture_output=True, text=True)
    opened, seconds = res.stdout.split()[-2:]
    return float(opened), float(seconds), np.load(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--config", default="configs/fashion-mnist.yaml")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--l1-queries", type=int, default=2000)
    ap.add_argument("--skip-sklearn", action="store_true")
    ap.add_argument("--one", choices=("estimator", "faiss"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    if args.one:
        return one(args)
    import faiss
    import lbknn
    from sklearn.neighbors import KNeighborsClassifier as SkClassifier

    xb, yb, xq, yq = load(args.dir)
    print(f"# references {xb.shape}, queries {xq.shape[0]}, K = 5; lbknn {lbknn.__version__}; "
          f"faiss threads {faiss.omp_get_max_threads()}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; each contender "
          f"in a process of its own, data loaded before its clock starts")

    times = {"estimator": [], "estimator_cold": [], "cli": [], "cli_wall": [], "faiss": []}
    out = tempfile.mkdtemp(prefix="lbknn-bench-")
    pred_est = cli_pred = pred_faiss = None
    for r in range(args.rounds):
        t_open, t_est, pred_est = contender(args, "estimator", out)
        times["estimator"].append(t_est)
        times["estimator_cold"].append(t_open + t_est)
        wall, total, read, cli_pred = run_cli(args.build, args.config, out)
        times["cli"].append(total - read)
        times["cli_wall"].append(wall)
        _, t_faiss, pred_faiss = contender(args, "faiss", out)
        times["faiss"].append(t_faiss)
        print(f"round {r}: estimator fit+predict {t_est:.3f} s (first call {t_open:.3f}), lbknn run {total - read:.3f} s "
              f"(wall {wall:.3f}, read {read:.3f}), faiss {t_faiss:.3f} s", flush=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    text = "query,label\n" + "".join(f"{q},{p}\n" for q, p in enumerate(pred_est.tolist()))
    same_cli = text == open(cli_pred).read()
    print(f"medians of {args.rounds} interleaved rounds: estimator fit+predict {med['estimator']:.3f} s; "
          f"lbknn run less read {med['cli']:.3f} s (wall {med['cli_wall']:.3f} s); "
          f"faiss add+search+vote {med['faiss']:.3f} s")
    print(f"estimator / lbknn run = {med['estimator'] / med['cli']:.3f}; "
          f"estimator / faiss = {med['estimator'] / med['faiss']:.3f}; from a fresh process, "
          f"estimator with its first call {med['estimator_cold']:.3f} s / lbknn run's wall time "
          f"= {med['estimator_cold'] / med['cli_wall']:.3f}")
    print(f"predictions: estimator == lbknn run's file: {same_cli}; "
          f"== faiss + vote: {bool(np.array_equal(pred_est, pred_faiss))}; "
          f"accuracy {float(np.mean(pred_est == yq)):.4f}")

    if args.skip_sklearn:
        return
    for metric, nq in (("euclidean", xq.shape[0]), ("manhattan", args.l1_queries)):
        for weights in ("uniform", "distance"):
            ours = lbknn.KNeighborsClassifier(5, weights=weights, metric=metric,
                                              algorithm="brute").fit(xb, yb).predict(xq[:nq])
            t0 = time.perf_counter()
            theirs = SkClassifier(5, weights=weights, metric=metric,
                                  algorithm="brute").fit(xb, yb).predict(xq[:nq])
            t_sk = time.perf_counter() - t0
            diff = np.flatnonzero(ours != theirs)
            print(f"scikit-learn {metric}/{weights}, {nq} queries ({t_sk:.1f} s): "
                  f"{'identical' if diff.size == 0 else f'{diff.size} differ: {diff[:10]}'}",
                  flush=True)


if __name__ == "__main__":
    main()
