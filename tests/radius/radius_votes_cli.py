"""task classify and regress with knn.radius (`lbknn run`, issue 40):

- against scikit-learn's RadiusNeighborsClassifier and
  RadiusNeighborsRegressor (an oracle that shares no code with lbknn) on
  integer grid points, whose squared distances are exact integers, with
  radii between two of them, so that no neighbour is near the radius:
  the predictions equal (but where two classes' scores tie to within
  float rounding), the probabilities and values to 1e-9 relative; an
  outlier's label (most_frequent, a class, a label that is no class),
  regression's NaN and its count in the summary and the report;
- against lbknn's own Python estimators (lbknn_index_radius_classify and
  _regress): the files byte-identical (probabilities %.9g, values %.17g);
- every run's files byte-identical across ranks and partitions;
- refused: a query without a neighbour and no outlier label (one line
  naming the query's row, non-zero exit, no file), a cap on the lists
  (one line, exit 2); knn.k beside knn.radius is not read (radius wins).

usage: radius_votes_cli.py LBKNN MPIEXEC RANKS... [--wide]"""
import os
import sys
import tempfile
import warnings

import numpy as np

from cli_runner import Runner

SEED = 4041

try:
    import sklearn.neighbors as skn
except ImportError:
    print("scikit-learn is missing: skipped")
    sys.exit(77)


# (task, weights, radius, per-query radii, outlier_label)
CASES = [
    ("classify", "uniform", 1.5, False, "most_frequent"),
    ("classify", "distance", 2.5, False, "2"),
    ("classify", "distance", None, True, "9"),
    ("regress", "uniform", 1.5, False, None),
    ("regress", "distance", None, True, None),
]


def job_text(task, weights, radius, radii, outlier, partition, out):
    lines = [f"task: {task}"]
    if task == "classify":
        lines.append("reference: {path: ref.npy, labels: ref_labels.npy}")
        lines.append("query: {path: q.npy, labels: q_labels.npy"
                     + (", radii: radii.npy" if radii else "") + "}")
        outs = f"predictions: {out}.csv, probabilities: {out}.proba.csv, report: {out}.report.yaml"
    else:
        lines.append("reference: {path: ref.npy, targets: ref_targets.npy}")
        lines.append("query: {path: q.npy, targets: q_targets.npy"
                     + (", radii: radii.npy" if radii else "") + "}")
        outs = f"predictions: {out}.csv, report: {out}.report.yaml"
    knn = [f"radius: {radius if radius is not None else 1}", f"weights: {weights}"]
    if task == "classify" and weights == "uniform":
        knn.append("k: 3")  # not read: the radius wins
    if outlier:
        knn.append(f"outlier_label: {outlier}")
    lines.append("knn: {" + ", ".join(knn) + "}")
    lines.append("device: {batch: 7, memory_mb: 1}")
    lines.append(f"mpi: {{partition: {partition}}}")
    lines.append("output: {" + outs + "}")
    return "\n".join(lines) + "\n"


def read_csv(path):
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def by_radius(q, radius, radii, answer):
    """answer(radius, rows) for each radius's queries, placed in query
    order: per-query radii as one estimator per distinct radius."""
    rs = radii if radii is not None else np.full(len(q), radius, dtype=np.float32)
    out = [None] * len(q)
    for r in np.unique(rs):
        rows = np.nonzero(rs == r)[0]
        for row, value in zip(rows, answer(float(r), rows)):
            out[row] = value
    return out


def sklearn_answer(data, task, weights, radius, radii, outlier):
    ref, q, labels, targets = data

    def answer(r, rows):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if task == "regress":
                est = skn.RadiusNeighborsRegressor(radius=r, weights=weights).fit(ref, targets)
                return est.predict(q[rows])
            # int64 classes: scikit-learn wants an int label of their dtype.
            label = outlier if outlier == "most_frequent" else int(outlier)
            est = skn.RadiusNeighborsClassifier(radius=r, weights=weights,
                                                outlier_label=label).fit(
                                                    ref, labels.astype(np.int64))
            return list(zip(est.predict(q[rows]), est.predict_proba(q[rows])))
    return by_radius(q, radius, radii, answer)


def check_sklearn(r, name, out, task, want):
    pred = read_csv(r.path(out + ".csv"))
    if task == "regress":
        got, exp = pred[:, 1], np.array(want)
        if not (np.array_equal(np.isnan(got), np.isnan(exp))
                and np.allclose(got[~np.isnan(got)], exp[~np.isnan(exp)], rtol=1e-6, atol=1e-6)):
            r.fail(f"{name}: values differ from scikit-learn's")
        return
    proba = read_csv(r.path(out + ".proba.csv"))[:, 1:]
    for i, (label, p) in enumerate(want):
        if not np.allclose(proba[i], p, rtol=1e-7, atol=1e-9):
            r.fail(f"{name}: query {i}: probabilities {proba[i]} != scikit-learn's {p}")
            return
        top = np.sort(p)[-2:] if len(p) > 1 else p
        tied = len(p) > 1 and top[1] - top[0] < 1e-9
        if int(pred[i, 1]) != int(label) and not tied:
            r.fail(f"{name}: query {i}: label {int(pred[i, 1])} != scikit-learn's {label}")
            return


def lbknn_files(r, data, task, weights, radius, radii, outlier, stem):
    """The same answers from lbknn's Python estimators, written as `lbknn
    run` writes them."""
    import lbknn
    ref, q, labels, targets = data

    def answer(r, rows):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if task == "regress":
                est = lbknn.RadiusNeighborsRegressor(radius=r, weights=weights).fit(ref, targets)
                return [(v, None) for v in est.predict(q[rows])]
            label = outlier if outlier == "most_frequent" else int(outlier)
            est = lbknn.RadiusNeighborsClassifier(radius=r, weights=weights,
                                                  outlier_label=label).fit(
                                                      ref, labels.astype(np.int64))
            return list(zip(est.predict(q[rows]), est.predict_proba(q[rows])))
    got = by_radius(q, radius, radii, answer)
    pred = [v for v, _ in got]
    proba = None if task == "regress" else np.array([p for _, p in got])
    with open(r.path(stem + ".csv"), "w") as f:
        f.write("query,label\n" if task == "classify" else "query,value\n")
        for i, v in enumerate(pred):
            f.write(f"{i},{int(v)}\n" if task == "classify" else f"{i},{'%.17g' % v}\n")
    if proba is None:
        return
    with open(r.path(stem + ".proba.csv"), "w") as f:
        f.write("query," + ",".join(f"p{c}" for c in range(proba.shape[1])) + "\n")
        for i, row in enumerate(proba):
            f.write(str(i) + "".join(",0" if v == 0 else ",%.9g" % v for v in row) + "\n")


def same_bytes(r, name, out, first, exts):
    for ext in exts:
        a, b = r.path(first + ext), r.path(out + ext)
        if open(a, "rb").read() != open(b, "rb").read():
            r.fail(f"{name}: {out}{ext} is not byte-identical to {first}{ext}")


def refusals(r, data):
    job = ("task: classify\nreference: {path: ref.npy, labels: ref_labels.npy}\n"
           "query: {path: q.npy}\nknn: {radius: 0.5}\n"
           "output: {predictions: refused.csv, report: refused.yaml}\n")
    for ranks in (1, 3):
        p = r.run(f"refuse_outlier_p{ranks}", ranks, job, expect=-1)
        # lbknn's lines (mpiexec adds its own about the exit)
        lines = [ln for ln in (p.stdout + p.stderr).splitlines()
                 if ln.strip() and (ranks == 1 or ln.startswith("lbknn"))]
        empty = np.nonzero(np.min(np.abs(data[1][:, None, :] - data[0][None]).max(2), 1) > 0.5)
        first = int(empty[0][0])
        if len(lines) != 1 or f"query row {first} has no neighbour" not in lines[0]:
            r.fail(f"refuse_outlier P={ranks}: expected one line naming query row {first}, "
                   f"got {lines}")
        for f in ("refused.csv", "refused.yaml"):
            if os.path.exists(r.path(f)):
                r.fail(f"refuse_outlier P={ranks}: {f} was written")
    job = ("task: regress\nreference: {path: ref.npy, targets: ref_targets.npy}\n"
           "query: {path: q.npy}\nknn: {radius: 1}\nradius: {max_neighbors: 3}\n"
           "output: {predictions: refused.csv}\n")
    p = r.run("refuse_cap", 1, job, expect=2)
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
    if len(lines) != 1 or "radius.max_neighbors" not in lines[0]:
        r.fail(f"refuse_cap: expected one line naming radius.max_neighbors, got {lines}")


def layouts(ranks, wide):
    if ranks == 1:
        return ["shard"]
    return ["shard", "spatial", "replicate"] if wide or ranks == 3 else ["shard"]


def main():
    lbknn_bin, mpiexec = sys.argv[1], sys.argv[2]
    wide = "--wide" in sys.argv
    ranks = [int(a) for a in sys.argv[3:] if a != "--wide"]
    rng = np.random.default_rng(SEED)
    print(f"radius_votes_cli: seed {SEED}, ranks {ranks}")
    ref = (rng.integers(0, 6, size=(240, 3)) - 3).astype(np.float32)
    q = (rng.integers(0, 8, size=(41, 3)) - 4).astype(np.float32)
    labels = rng.integers(0, 5, size=len(ref)).astype(np.int32)
    targets = rng.normal(size=len(ref))
    radii = rng.choice([0.5, 1.5, 2.5], size=len(q)).astype(np.float32)
    data = (ref, q, labels, targets)
    with tempfile.TemporaryDirectory() as work:
        for name, a in (("ref", ref), ("q", q), ("ref_labels", labels),
                        ("q_labels", rng.integers(0, 5, size=len(q)).astype(np.int32)),
                        ("ref_targets", targets), ("q_targets", rng.normal(size=len(q))),
                        ("radii", radii)):
            np.save(os.path.join(work, name + ".npy"), a)
        r = Runner(lbknn_bin, mpiexec, work)
        for i, (task, weights, radius, per_query, outlier) in enumerate(CASES):
            want = sklearn_answer(data, task, weights, radius, radii if per_query else None,
                                  outlier)
            stem = f"v{i}_python"
            lbknn_files(r, data, task, weights, radius, radii if per_query else None, outlier,
                        stem)
            exts = [".csv"] + ([".proba.csv"] if task == "classify" else [])
            for p in ranks:
                for partition in layouts(p, wide):
                    out = f"v{i}_p{p}_{partition}"
                    name = f"case {i} ({task} {weights}) P={p} {partition}"
                    before = r.failed
                    proc = r.run(out, p, job_text(task, weights, radius, per_query, outlier,
                                                  partition, out))
                    if r.failed == before:
                        check_sklearn(r, name, out, task, want)
                        same_bytes(r, name + " vs the Python estimator", out, stem, exts)
                        if task == "regress":
                            empty = int(np.isnan(np.array(want)).sum())
                            report = open(r.path(out + ".report.yaml")).read()
                            if f"queries_without_neighbours: {empty}\n" not in report or (
                                    empty and f"warning    {empty} of {len(q)} queries"
                                    not in proc.stdout):
                                r.fail(f"{name}: {empty} queries without neighbours are not "
                                       "in the summary and the report")
                    print(f"{name}: {'ok' if r.failed == before else 'FAILED'}")
        if 1 in ranks:
            before = r.failed
            refusals(r, data)
            print(f"refusals: {'ok' if r.failed == before else 'FAILED'}")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
