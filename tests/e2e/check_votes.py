#!/usr/bin/python3
"""Votes of a run against scikit-learn's KNeighborsClassifier and NumPy.

    check_votes.py DATA_DIR K METRIC WEIGHTS T PREDICTIONS.csv PROBABILITIES.csv
                   NEIGHBORS.ivecs DISTANCES.fvecs REPORT.yaml [another 10 ...]

Each group of ten arguments is one run, checked in this one process
(importing scikit-learn took 1.4 s of each check); every run is checked,
and any that differs fails the whole call with its metric and weights named.

The neighbour search is checked elsewhere (verify_outputs, against the host
oracle); here the run's own neighbours and distances go into scikit-learn
as a precomputed distance matrix (every other reference infinitely far), so
that scikit-learn's predict_proba and predict - its weights, its
zero-distance rule, its normalisation - are compared with the run's
probabilities and predictions. Softmax weights are a callable exp(-d / T) of
the distance (for cosine 1 - cos, so exp(cos / T) up to a constant factor;
for ip the dot product enters as the distance max - dot). Top-5 accuracy is
recomputed with NumPy (classes ranked by score, ties to the smaller label)
and compared with the report. Exit 77 when scikit-learn is missing."""
import sys

try:
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier
except ImportError:
    print("SKIP: python3-sklearn not installed")
    sys.exit(77)


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = raw[0]
    rows = raw.reshape(-1, dim + 1)[:, 1:]
    return rows.view(dtype) if dtype != np.int32 else rows


def check(data, k, metric, weights, temperature, pred_path, proba_path, nn_path, dist_path,
          report):
    k, temperature = int(k), float(temperature)
    labels = read_vecs(f"{data}/reference-labels.ivecs", np.int32)[:, 0]
    truth = read_vecs(f"{data}/query-labels.ivecs", np.int32)[:, 0]
    ids = read_vecs(nn_path, np.int32)
    dist = read_vecs(dist_path, np.float32).astype(np.float64)
    nq, n = len(ids), len(labels)
    if metric == "ip":
        dist = dist.max() - dist  # larger dot product = nearer, as a distance >= 0
    far = 1e30
    matrix = np.full((nq, n), far)
    matrix[np.arange(nq)[:, None], ids] = dist
    w = {"uniform": "uniform", "distance": "distance",
         "softmax": lambda d: np.exp(-(d - d.min(axis=1, keepdims=True)) / temperature)}[weights]
    clf = KNeighborsClassifier(n_neighbors=k, algorithm="brute", metric="precomputed", weights=w)
    clf.fit(np.zeros((n, n)), labels)
    proba = clf.predict_proba(matrix)
    predicted = clf.classes_[proba.argmax(axis=1)]

    ours = np.loadtxt(proba_path, delimiter=",", skiprows=1, ndmin=2)
    assert ours.shape == (nq, 1 + labels.max() + 1), ours.shape
    assert (ours[:, 0] == np.arange(nq)).all(), "query column"
    mine = ours[:, 1:][:, clf.classes_]
    # 1e-5: the run weighs its exact keys, scikit-learn the distances as the
    # file holds them (cosine: 1 - cos rounded to float, a relative change of
    # up to 1e-7 / T in a softmax weight); the CSV prints 9 digits.
    worst = np.abs(mine - proba).max()
    assert worst < 1e-5, f"probabilities differ from scikit-learn by up to {worst}"
    pred = np.loadtxt(pred_path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)[:, 1]
    bad = np.nonzero(pred != predicted)[0]
    assert len(bad) == 0, f"predictions differ from scikit-learn at queries {bad[:10]}"

    scores = np.zeros((nq, labels.max() + 1))
    scores[:, clf.classes_] = proba
    order = np.argsort(-scores, axis=1, kind="stable")
    top5 = int((order[:, :5] == truth[:, None]).any(axis=1).sum())
    with open(report) as f:
        reported = [int(line.split()[1]) for line in f if line.startswith("correct_top5:")]
    assert reported == [top5], f"report says correct_top5 {reported}, NumPy {top5}"
    print(f"ok: {nq} queries, probabilities within {worst:.2g} of scikit-learn, "
          f"predictions equal, top-5 {top5}")


def main():
    args = sys.argv[1:]
    if not args or len(args) % 10:
        sys.exit(__doc__)
    failed = 0
    for at in range(0, len(args), 10):
        run = args[at:at + 10]
        try:
            print(f"{run[2]} {run[3]}: ", end="")
            check(*run)
        except AssertionError as e:
            print(f"FAIL: {e}")
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
