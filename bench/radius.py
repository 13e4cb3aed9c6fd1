#!/usr/bin/python3
"""Issue 40's radius targets, lbknn against its peers side by side, rounds
interleaved (lbknn, then each peer, every round), medians:

    /usr/bin/python3 bench/radius.py [--build DIR] [--quick] [--rounds N]
                                     [--only search,graph,memory,count] [--mpiexec PATH]

search  1e6 uniform 3-D float32 references (bench_points), 1e5 queries, two
        radii giving 16 and 128 neighbours a query on average: `lbknn run
        job.yaml` (task radius, knn.engine kdtree, one rank, output.graph and
        output.counts) against SciPy cKDTree(leafsize=16, balanced_tree=True)
        .query_ball_point(q, r, workers=2, return_sorted=True) and
        scikit-learn KDTree(leaf_size=16).query_radius(q, r,
        return_distance=True, sort_results=True) (one thread: it has none
        other); each peer's tree build timed apart from its query. Then
        the lists compared: ids (as sets: cKDTree sorts by id) and distances
        against float64 ones from the same float32 points.
graph   the radius graph of 1e6 clustered 3-D points (bench_points: 64 blobs,
        sigma 0.01), a radius giving 30 neighbours a point on average: task
        radius_graph against cKDTree.query_ball_point(X, r, workers=2) (its
        query timed; each point itself dropped afterwards, untimed).
memory  the same radius graph at P = 1 and P = 2 (`mpirun --bind-to core`,
        P = 1 under mpirun too): each rank's peak RSS above the process
        baseline (the same job on the first 1000 points), P = 2's largest
        over P = 1's.
count   radius.count_only on 1e7 uniform points (task radius_graph, 16
        neighbours a point, output.counts) against a K = 1 kNN graph of the
        same points (task graph, output.graph): peak RSS of each.

--quick: every set at 1e5 points (1e4 queries), for a smoke test in a
minute. lbknn's times: the run's report (timings_s: search, total) where the
CLI writes one for the radius tasks (the sum of its search phases, as
timings_s.search holds the last of the two passes only); otherwise the wall time of `lbknn run`,
and as its search the wall time less that of the same job at radius 0 (the
same reading, device set-up and build, an empty search), both measured every
round. Peak RSS: the report's rank_stats where there is one; otherwise GNU
time's %M (wait4's ru_maxrss of lbknn, started by the small `time`
process, not by this one: a child exec'd from this process would inherit
its peak). Prints a ready-to-paste Markdown block; files under
bench/out/radius/.
"""
import argparse
import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def blas_coretype():
    """bench/peers.sh's rule: SkylakeX only where avx512 f/dq/bw/vl are all there."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    need = {"avx512f", "avx512dq", "avx512bw", "avx512vl"}
    return ("SkylakeX" if need <= flags else None), flags


CORE, FLAGS = blas_coretype()
if CORE:  # before NumPy loads OpenBLAS; this benchmark's process only
    os.environ["OPENBLAS_CORETYPE"] = CORE
else:
    os.environ.pop("OPENBLAS_CORETYPE", None)

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse  # noqa: E402
import sklearn  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402
from sklearn.neighbors import KDTree  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
LEAF = 16
# Relative distance within which a point counts as sitting at r: float32
# keys (squared distances summed in float32) against float64 ones.
TIE_REL = 2.0**-19


class Printer(list):
    """The Markdown block, printed line by line as it grows (a failure late
    in the run keeps what came before)."""

    def append(self, line):
        super().append(line)
        print(line, flush=True)


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].view(np.float32).copy()


def points(build, kind, n, nq):
    """bench_points' set (n references, nq queries) in bench/out/radius."""
    d = os.path.join(ROOT, "bench", "out", "radius", f"{kind}-{n}-{nq}")
    if not os.path.exists(os.path.join(d, "query.fvecs")):
        subprocess.run([os.path.join(build, "bench", "bench_points"), d, kind, str(n), str(nq),
                        "3"], check=True, stdout=subprocess.DEVNULL)
    return d


def calibrate(tree, sample, mean, self_search):
    """A float32-exact radius whose mean count over `sample` is `mean`
    (bisection on cKDTree's counts; self search: each point itself not
    counted)."""
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        c = tree.query_ball_point(sample, mid, workers=2, return_length=True).mean()
        c -= 1 if self_search else 0
        lo, hi = (mid, hi) if c < mean else (lo, mid)
    return float(np.float32(hi))


# ---------------------------------------------------------------- lbknn

class Lbknn:
    def __init__(self, build, mpiexec):
        self.exe = os.path.join(build, "lbknn")
        self.mpiexec = mpiexec
        self.report = self._report_supported()

    def _report_supported(self):
        """Does the CLI write output.report for task radius? (issue 40's
        first version refused it.)"""
        with tempfile.TemporaryDirectory() as tmp:
            job = {"task": "radius", "synthetic": {"points": 200, "queries": 10, "dim": 3},
                   "knn": {"radius": 0.5}, "output": {"report": os.path.join(tmp, "r.yaml")}}
            path = write_job(tmp, job)
            r = subprocess.run([self.exe, "run", path, "--quiet"], capture_output=True, text=True)
            return r.returncode == 0

    def run(self, job_path, ranks=0):
        """One run: wall s, each rank's peak RSS bytes, the report (or None)."""
        with tempfile.TemporaryDirectory() as tmp:
            rss = os.path.join(tmp, "rss")
            wrap = ["/usr/bin/time", "-f", "%M", "-o"]
            if ranks:
                inner = " ".join(wrap) + f" {rss}.$OMPI_COMM_WORLD_RANK " + \
                    f"{shlex.quote(self.exe)} run {shlex.quote(job_path)} --quiet"
                cmd = [self.mpiexec, "-n", str(ranks), "--bind-to", "core", "sh", "-c", inner]
                env = dict(os.environ, **MPI_ENV)
            else:
                cmd = wrap + [rss + ".0", self.exe, "run", job_path, "--quiet"]
                env = os.environ
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env=env)
            wall = time.perf_counter() - t0
            peaks = []
            for rank in range(max(ranks, 1)):
                with open(f"{rss}.{rank}") as f:
                    peaks.append(int(f.read().split()[-1]) * 1024)
        report = None
        if self.report and os.path.exists(job_report(job_path)):
            import yaml
            with open(job_report(job_path)) as f:
                report = yaml.safe_load(f)
            peaks = [s["peak_rss_bytes"] for s in report["rank_stats"]]
        return wall, peaks, report


def job_report(job_path):
    return os.path.join(os.path.dirname(job_path), "report.yaml")


def write_job(d, job, name="job.yaml"):
    """A job file of nested dicts, YAML flow style (no yaml module needed)."""
    def val(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {val(x)}" for k, x in v.items()) + "}"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v)
        return str(v)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        for k, v in job.items():
            f.write(f"{k}: {val(v)}\n")
    return path


def radius_job(lb, d, name, task, ref, query, radius, graph=True, count_only=False):
    sub = os.path.join(d, name)
    out = {}
    if graph:
        out["graph"] = os.path.join(sub, "graph.npz")
    out["counts"] = os.path.join(sub, "counts.npy")
    if lb.report:
        out["report"] = os.path.join(sub, "report.yaml")
    job = {"task": task, "reference": {"path": ref}}
    if query:
        job["query"] = {"path": query}
    job["knn"] = {"radius": radius, "engine": "kdtree"}
    if count_only:
        job["radius"] = {"count_only": True}
    job["output"] = out
    return write_job(sub, job), out


SEARCH_PHASES = ("distribute", "query", "merge", "output")


def lbknn_times(lb, job, empty_job, ranks=0):
    """(search s, total s, peaks, how, phases): the report's, or wall-clock
    ones. The report's search is the sum of its search phases (both passes:
    its timings_s.search holds the last pass only)."""
    wall, peaks, rep = lb.run(job, ranks)
    if rep is not None:
        t = rep["timings_s"]
        phases = {k: t[k]["max"] for k in SEARCH_PHASES}
        phases["report search"] = t["search"]
        phases["wall"] = wall
        return sum(t[k]["max"] for k in SEARCH_PHASES), t["total"], peaks, "report", phases
    empty, _, _ = lb.run(empty_job, ranks)
    return wall - empty, wall, peaks, "wall", {}


def phase_table(out, rows):
    """rows: (label, [phases dict per round]): medians of each phase."""
    if not rows or not rows[0][1] or not rows[0][1][0]:
        return
    keys = list(rows[0][1][0])
    out.append("")
    out.append("| lbknn's phases, medians s | " + " | ".join(keys) + " |")
    out.append("|---|" + "---|" * len(keys))
    for label, ph in rows:
        out.append(f"| {label} | " + " | ".join(f"{med([p[k] for p in ph]):.3f}" for k in keys)
                   + " |")


# ---------------------------------------------------------------- peers

def timed(fn):
    t0 = time.perf_counter()
    v = fn()
    return time.perf_counter() - t0, v


def flat(lists):
    lens = np.fromiter((len(a) for a in lists), dtype=np.int64, count=len(lists))
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    if ptr[-1] == 0:
        return ptr, np.zeros(0, dtype=np.int64)
    if isinstance(lists[0], np.ndarray):
        return ptr, np.concatenate(lists).astype(np.int64)
    import itertools
    return ptr, np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=ptr[-1])


def rows_of(ptr):
    return np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))


def d64(x, q, rows, ids):
    return np.sqrt(((q[rows].astype(np.float64) - x[ids].astype(np.float64)) ** 2).sum(1))


def compare(x, q, r, g, ptr, ids, what):
    """lbknn's CSR graph g against a peer's lists (ptr, ids): rows whose id
    sets are equal; the others' extra or missing ids all at r (float32
    rounding)? lbknn's distances against float64 ones; its rows in
    (distance, id) order?"""
    lp, li, ld = g.indptr.astype(np.int64), g.indices.astype(np.int64), g.data
    lrows, prows = rows_of(lp), rows_of(ptr)
    # every list's ids in (row, id) order, for a set comparison
    a = np.lexsort((li, lrows))
    b = np.lexsort((ids, prows))
    la = lrows[a] * (len(x) + 1) + li[a]
    pb = prows[b] * (len(x) + 1) + ids[b]
    only_l = np.setdiff1d(la, pb, assume_unique=True)
    only_p = np.setdiff1d(pb, la, assume_unique=True)
    odd = np.concatenate([only_l, only_p])
    orow, oid = odd // (len(x) + 1), odd % (len(x) + 1)
    at_r = np.abs(d64(x, q, orow, oid) - r) <= TIE_REL * r if len(odd) else np.ones(0, bool)
    rows_diff = len(np.unique(orow))
    dd = d64(x, q, lrows, li)
    rel = np.abs(ld.astype(np.float64) - dd) / np.maximum(dd, 1e-30)
    step = np.diff(ld.astype(np.float64))
    same_row = lrows[1:] == lrows[:-1]
    back = int((same_row & (step < 0)).sum())
    ties = int((same_row & (step == 0) & (np.diff(li) < 0)).sum())
    return (f"{what}: {len(lp) - 1 - rows_diff} of {len(lp) - 1} rows the same ids; "
            f"{len(only_l)} ids only lbknn's, {len(only_p)} only the peer's"
            + (f" ({'all' if at_r.all() else 'NOT all'} within 2^-19 of r)" if len(odd) else "")
            + f"; lbknn's distances within {rel.max() if len(rel) else 0:.2e} (relative) of "
            f"float64's; its rows in distance order: {'yes' if back == 0 else f'NO ({back})'}, "
            f"{ties} equal float32 distances not in id order")


def sk_order(g, sk_ids, sk_ptr):
    """Rows of equal length whose id order equals scikit-learn's (float64
    distances)."""
    lp, li = g.indptr.astype(np.int64), g.indices.astype(np.int64)
    same_len = np.diff(lp) == np.diff(sk_ptr)
    ours = np.repeat(same_len, np.diff(lp))
    theirs = np.repeat(same_len, np.diff(sk_ptr))
    differ = li[ours] != sk_ids[theirs]
    bad = np.unique(rows_of(lp)[ours][differ])
    return (f"scikit-learn's order (float64 distances): {int(same_len.sum()) - len(bad)} of "
            f"{int(same_len.sum())} rows of equal length in the same order")


# ---------------------------------------------------------------- workloads

def med(v):
    return statistics.median(v)


def rng(v):
    return f"{min(v):.3f}-{max(v):.3f}"


def bench_search(lb, build, n, nq, rounds, out):
    d = points(build, "uniform", n, nq)
    ref, qry = os.path.join(d, "reference.fvecs"), os.path.join(d, "query.fvecs")
    x, q = read_fvecs(ref), read_fvecs(qry)
    tb_ck, ck = timed(lambda: cKDTree(x, leafsize=LEAF, balanced_tree=True))
    tb_sk, sk = timed(lambda: KDTree(x, leaf_size=LEAF))
    work = os.path.join(ROOT, "bench", "out", "radius", "search")
    rows, notes = [], []
    for mean in (16, 128):
        r = calibrate(ck, q[:20000], mean, False)
        job, files = radius_job(lb, work, f"r{mean}", "radius", ref, qry, r)
        empty, _ = radius_job(lb, work, f"r{mean}-empty", "radius", ref, qry, 0.0)
        t = {"search": [], "total": [], "ck": [], "sk": [], "ckb": [], "skb": [], "ph": []}
        for _ in range(rounds):
            s, tot, _, how, ph = lbknn_times(lb, job, empty)
            t["ph"].append(ph)
            t["search"].append(s)
            t["total"].append(tot)
            tq, ck_res = timed(lambda: ck.query_ball_point(q, r, workers=2, return_sorted=True))
            t["ck"].append(tq)
            t["ckb"].append(timed(lambda: cKDTree(x, leafsize=LEAF, balanced_tree=True))[0])
            tq, (sk_i, sk_d) = timed(lambda: sk.query_radius(q, r, return_distance=True,
                                                             sort_results=True))
            t["sk"].append(tq)
            t["skb"].append(timed(lambda: KDTree(x, leaf_size=LEAF))[0])
        g = scipy.sparse.load_npz(files["graph"])
        counts = np.load(files["counts"])
        cptr, cids = flat(ck_res)
        sptr, sids = flat(sk_i)
        notes.append(f"r = {r!r} (mean {counts.mean():.2f} neighbours): " +
                     compare(x, q, r, g, cptr, cids, "cKDTree") + "; " +
                     compare(x, q, r, g, sptr, sids, "scikit-learn").split("; lbknn's")[0] +
                     "; " + sk_order(g, sids, sptr))
        del ck_res, sk_i, sk_d
        rows.append((mean, r, counts.mean(), t, how))
    out.append(f"\n### Radius search: {n} uniform 3-D references, {nq} queries, one rank, "
               f"k-d tree ({rounds} rounds, medians, range)\n")
    out.append("| mean neighbours | r | lbknn search s | lbknn total s | cKDTree query s "
               "(build) | sklearn query s (build) | search / cKDTree | search / sklearn "
               "| total / (cKDTree build + query) |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for mean, r, got, t, how in rows:
        s, tot = med(t["search"]), med(t["total"])
        out.append(
            f"| {got:.2f} | {r:.6g} | {s:.3f} ({rng(t['search'])}) | {tot:.3f} "
            f"({rng(t['total'])}) | {med(t['ck']):.3f} ({med(t['ckb']):.3f}) | "
            f"{med(t['sk']):.3f} ({med(t['skb']):.3f}) | **{s / med(t['ck']):.2f}x** | "
            f"**{s / med(t['sk']):.2f}x** | {tot / (med(t['ck']) + med(t['ckb'])):.2f}x |")
    phase_table(out, [(f"{got:.0f} neighbours", t["ph"]) for _, _, got, t, _ in rows])
    out.append("")
    out.append(f"lbknn search: {SEARCH_HOW[rows[0][4]]}")
    for n_ in notes:
        out.append(f"- {n_}")
    return tb_ck, tb_sk


SEARCH_HOW = {
    "report": "the sum of the report's search phases (distribute, query, merge, output; "
              "both passes, count then fill; the 'report search' column is "
              "timings_s.search, which holds both passes since radius-perf); total: timings_s.total; wall: `lbknn run` "
              "from start to exit.",
    "wall": "the wall time of `lbknn run job.yaml` less that of the same job at r = 0 "
            "(reading, device, build, an empty search; no report for task radius yet); "
            "total: the wall time (process start to exit).",
}


def bench_graph(lb, build, n, rounds, out):
    d = points(build, "clustered", n, 1)
    ref = os.path.join(d, "reference.fvecs")
    x = read_fvecs(ref)
    ck = cKDTree(x, leafsize=LEAF, balanced_tree=True)
    r = calibrate(ck, x[::max(1, n // 20000)], 30, True)
    work = os.path.join(ROOT, "bench", "out", "radius", "graph")
    job, files = radius_job(lb, work, "graph", "radius_graph", ref, None, r)
    empty, _ = radius_job(lb, work, "graph-empty", "radius_graph", ref, None, 0.0)
    t = {"search": [], "total": [], "ck": [], "ckb": [], "ph": []}
    for _ in range(rounds):
        s, tot, _, how, ph = lbknn_times(lb, job, empty)
        t["ph"].append(ph)
        t["search"].append(s)
        t["total"].append(tot)
        tb, tree = timed(lambda: cKDTree(x, leafsize=LEAF, balanced_tree=True))
        t["ckb"].append(tb)
        tq, res = timed(lambda: tree.query_ball_point(x, r, workers=2))
        t["ck"].append(tq)
        del tree
    g = scipy.sparse.load_npz(files["graph"])
    ptr, ids = flat(res)
    del res
    rows = rows_of(ptr)
    keep = ids != rows  # each point itself dropped (untimed)
    ptr = np.zeros(len(x) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=len(x)), out=ptr[1:])
    ids = ids[keep]
    note = compare(x, x, r, g, ptr, ids, "cKDTree")
    s, tot = med(t["search"]), med(t["total"])
    out.append(f"\n### Radius graph: {n} clustered 3-D points, one rank ({rounds} rounds, "
               "medians, range)\n")
    out.append("| mean neighbours | r | lbknn search s | lbknn total s | cKDTree query s "
               "(build) | search / cKDTree query | total / (cKDTree build + query) |")
    out.append("|---|---|---|---|---|---|---|")
    out.append(f"| {np.diff(g.indptr).mean():.2f} | {r:.6g} | {s:.3f} ({rng(t['search'])}) | "
               f"{tot:.3f} ({rng(t['total'])}) | {med(t['ck']):.3f} ({med(t['ckb']):.3f}) | "
               f"**{s / med(t['ck']):.2f}x** | {tot / (med(t['ck']) + med(t['ckb'])):.2f}x |")
    phase_table(out, [("radius graph", t["ph"])])
    out.append("")
    out.append(f"lbknn search: {SEARCH_HOW[how]} cKDTree: query_ball_point(X, r, workers=2) "
               "(its default sorts each list by id), each point itself dropped afterwards, "
               "untimed.")
    out.append(f"- {note}")
    return r


def bench_memory(lb, build, n, r, out):
    d = points(build, "clustered", n, 1)
    ref = os.path.join(d, "reference.fvecs")
    work = os.path.join(ROOT, "bench", "out", "radius", "memory")
    small = os.path.join(work, "small.npy")
    os.makedirs(work, exist_ok=True)
    np.save(small, read_fvecs(ref)[:1000])
    job, _ = radius_job(lb, work, "graph", "radius_graph", ref, None, r)
    base_job, _ = radius_job(lb, work, "base", "radius_graph", small, None, r)
    rows = []
    for p in (1, 2):
        _, base, _ = lb.run(base_job, p)
        wall, peaks, _ = lb.run(job, p)
        rows.append((p, max(base), peaks, wall))
    one = rows[0][2][0] - rows[0][1]
    out.append(f"\n### Radius graph memory: {n} clustered points, r = {r:.6g}, "
               "`mpirun --bind-to core` (P = 1 too)\n")
    out.append("| P | baseline MiB (1000 points) | peak RSS per rank MiB | above baseline MiB "
               "(max) | ratio to P = 1 | wall s |")
    out.append("|---|---|---|---|---|---|")
    for p, base, pk, wall in rows:
        above = max(pk) - base
        out.append(f"| {p} | {base / 2**20:.1f} | {', '.join(f'{v / 2**20:.1f}' for v in pk)} | "
                   f"{above / 2**20:.1f} | **{above / one:.2f}** | {wall:.2f} |")
    out.append("")
    out.append("Peak RSS: " + ("the report's rank_stats." if lb.report else
                               "GNU time's %M per rank (the report has none for task "
                               "radius_graph yet)."))


def bench_count(lb, build, n, out):
    d = points(build, "uniform", n, 1)
    ref = os.path.join(d, "reference.fvecs")
    r = float(np.float32((3 * 16 / (4 * np.pi * n)) ** (1 / 3)))
    work = os.path.join(ROOT, "bench", "out", "radius", "count")
    job, files = radius_job(lb, work, "count", "radius_graph", ref, None, r, graph=False,
                            count_only=True)
    knn = write_job(os.path.join(work, "knn1"), {
        "task": "graph", "reference": {"path": ref}, "knn": {"k": 1, "engine": "kdtree"},
        "output": {"graph": os.path.join(work, "knn1", "graph.npz"),
                   "report": os.path.join(work, "knn1", "report.yaml")}})
    wc, pc, _ = lb.run(job)
    wk, pk, _ = lb.run(knn)
    mean = np.load(files["counts"]).mean()
    out.append(f"\n### Count-only: {n} uniform points, task radius_graph, r = {r:.6g} "
               f"(mean {mean:.2f} neighbours), one rank\n")
    out.append("| run | peak RSS MiB | wall s |")
    out.append("|---|---|---|")
    out.append(f"| radius.count_only, output.counts | {pc[0] / 2**20:.1f} | {wc:.2f} |")
    out.append(f"| task graph, K = 1, output.graph | {pk[0] / 2**20:.1f} | {wk:.2f} |")
    out.append(f"| ratio | **{pc[0] / pk[0]:.2f}** | |")


def header(args, lb):
    from threadpoolctl import threadpool_info
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), "?")
    fam = {}
    for ln in open("/proc/cpuinfo"):
        k, _, v = ln.partition(":")
        if k.strip() in ("cpu family", "model") and k.strip() not in fam:
            fam[k.strip()] = v.strip()
    isa = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl")
                   if f in FLAGS)
    blas = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} "
            f"x{i.get('num_threads')}" for i in threadpool_info() if i.get("user_api") == "blas"]
    dev = subprocess.run([lb.exe, "devices"], capture_output=True, text=True).stdout
    dev = next((" ".join(ln.split()[4:]) for ln in dev.splitlines()
                if ln.strip().startswith("*")), "?")
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"],
                            capture_output=True, text=True).stdout.strip()[:72]
    return [
        f"#### bench/radius.py, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
        "",
        f"- command: `/usr/bin/python3 bench/radius.py {' '.join(sys.argv[1:])}`",
        f"- lbknn: {commit}; device {dev}",
        f"- CPU: {cpu} (family {fam.get('cpu family', '?')} model {fam.get('model', '?')}), "
        f"{os.cpu_count()} cores; ISA: {isa}",
        f"- peers: numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn "
        f"{sklearn.__version__}, Python {platform.python_version()}; BLAS "
        f"{'; '.join(blas) or 'none'} (OPENBLAS_CORETYPE="
        f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; the trees call no BLAS)",
        f"- load average at the start: {load()}",
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="1e5 points, 1e4 queries")
    ap.add_argument("--rounds", type=int, default=0, help="default 3 (--quick: 2)")
    ap.add_argument("--only", default="search,graph,memory,count")
    ap.add_argument("--mpiexec", default="mpirun")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    rounds = args.rounds or (2 if args.quick else 3)
    only = set(args.only.split(","))
    n, nq, big = (100_000, 10_000, 100_000) if args.quick else (1_000_000, 100_000, 10_000_000)
    os.environ.setdefault("POCL_CACHE_DIR", os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join(os.environ.get("HOME", "/tmp"), ".cache")),
        "pocl", "kcache"))
    lb = Lbknn(build, args.mpiexec)
    out = Printer()
    for line in header(args, lb):
        out.append(line)
    loads = [load()]
    if "search" in only:
        tb_ck, tb_sk = bench_search(lb, build, n, nq, rounds, out)
        loads.append(load())
    r = None
    if "graph" in only:
        r = bench_graph(lb, build, n, rounds, out)
        loads.append(load())
    if "memory" in only:
        if r is None:
            d = points(build, "clustered", n, 1)
            x = read_fvecs(os.path.join(d, "reference.fvecs"))
            r = calibrate(cKDTree(x, leafsize=LEAF), x[::max(1, n // 20000)], 30, True)
        bench_memory(lb, build, n, r, out)
        loads.append(load())
    if "count" in only:
        bench_count(lb, build, big, out)
        loads.append(load())
    out.append("")
    out.append(f"Load average (1, 5, 15 min) after each part: {' | '.join(loads)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
