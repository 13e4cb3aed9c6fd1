#!/usr/bin/python3
"""The report's work counters (rank_stats: distance_evals, nodes_visited,
queries_answered, bytes_sent, bytes_received; the work: block) against
oracles that do not run lbknn's code: arithmetic of the brute force's pairs
and of a k-d tree walk that must visit everything, bounds, sums over the
ranks, and equality across runs, thread counts and batch sizes.

usage: work_counters.py LBKNN MPIEXEC CASE
CASE: brute_pairs | tree_everything | tree_bounds | spatial_sums | repeatable
"""
import os
import subprocess
import sys
import re
import tempfile

LBKNN, MPIEXEC, CASE = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
WORK = ("distance_evals", "nodes_visited", "queries_answered", "bytes_sent", "bytes_received")
failures = []


def flow_map(text):
    """{a: 1, b: x} of the report's flow mappings: numbers, null and words."""
    out = {}
    for key, value in re.findall(r'(\w+): ("[^"]*"|[^,}]*)', text):
        value = value.strip()
        if value == "null":
            out[key] = None
        elif re.fullmatch(r"-?\d+", value):
            out[key] = int(value)
        elif re.fullmatch(r"-?[\d.]+(e-?\d+)?", value):
            out[key] = float(value)
        else:
            out[key] = value.strip('"')
    return out


def read_report(text):
    """The parts of a report this test reads (rank_stats, work, partition),
    parsed here rather than with PyYAML, which the GPU bundle's machine may
    not have."""
    report = {"rank_stats": [], "work": {}}
    section = None
    for line in text.splitlines():
        line = line.split("  #")[0].rstrip()
        if not line.startswith(" "):
            section = line.split(":")[0]
            if section == "partition":
                report["partition"] = flow_map(line[len("partition:"):])
        elif section == "rank_stats" and line.startswith("  - {"):
            report["rank_stats"].append(flow_map(line[4:]))
        elif section == "work" and "{" in line:
            name, rest = line.strip().split(":", 1)
            report["work"][name] = flow_map(rest)
    return report


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(ranks, points, queries, dim=3, k=16, engine="kdtree", env=None, extra=()):
    """One run's report (dict), synthetic data (seed fixed by the defaults)."""
    with tempfile.TemporaryDirectory(prefix="lbk-work.") as d:
        report = os.path.join(d, "r.yaml")
        cmd = [MPIEXEC, "-n", str(ranks), LBKNN, "run", "--quiet",
               "--set", f"synthetic.points={points}", "--set", f"synthetic.queries={queries}",
               "--set", f"synthetic.dim={dim}", "--set", f"knn.k={k}",
               "--set", f"knn.engine={engine}", "--set", f"output.report={report}",
               "--set", "output.predictions="] + list(extra)
        e = dict(os.environ)
        e.update(env or {})
        subprocess.run(cmd, check=True, env=e, cwd=d)
        with open(report) as f:
            r = read_report(f.read())
    check(len(r["rank_stats"]) == ranks and len(r["work"]) >= len(WORK),
          f"the report of {ranks} ranks has {len(r['rank_stats'])} rank_stats lines and "
          f"work counters {sorted(r['work'])}")
    return r


def counts(r):
    return [{w: s[w] for w in WORK} for s in r["rank_stats"]]


def total(r, w):
    return sum(s[w] for s in r["rank_stats"])


def shard_rows(n, p):
    return [(i + 1) * n // p - i * n // p for i in range(p)]


def brute_pairs():
    # 5-D: below the prefilter's 16 dimensions, so every query is scored
    # against every row of the rank's shard exactly once.
    n, nq = 2000, 301
    for p in (1, 3):
        r = run(p, n, nq, dim=5, engine="brute", extra=["--set", "mpi.partition=shard"])
        for i, (s, rows) in enumerate(zip(r["rank_stats"], shard_rows(n, p))):
            check(s["points"] == rows, f"P={p} rank {i}: {s['points']} points, want {rows}")
            check(s["distance_evals"] == rows * nq,
                  f"P={p} rank {i}: distance_evals {s['distance_evals']}, want {rows * nq}")
            check(s["nodes_visited"] == 0, f"P={p} rank {i}: brute force visited tree nodes")
            check(s["queries_answered"] == nq,
                  f"P={p} rank {i}: answered {s['queries_answered']}, want every query {nq}")
        check(r["work"]["distance_evals"]["total"] == n * nq,
              f"P={p}: work total {r['work']['distance_evals']['total']}, want N x nq = {n * nq}")


def bit_length(n):
    return n.bit_length()


def tree_everything():
    # K >= N: the K-th key stays +inf, so no far side is ever skipped and the
    # walk takes every node: N keys per query, and every node above the
    # bucket level (2^bl - 1, all full) plus every bucket (2^bl), with
    # bl = max(levels - 4, 0) (LBK_TREE_BUCKET_LEVELS).
    for n in (10, 15, 16, 200, 1000):
        nq = 37
        bl = max(bit_length(n) - 4, 0)
        r = run(1, n, nq, k=n)
        s = r["rank_stats"][0]
        check(s["distance_evals"] == n * nq,
              f"N={n}, K=N: distance_evals {s['distance_evals']}, want {n * nq}")
        want = (2 ** (bl + 1) - 1) * nq
        check(s["nodes_visited"] == want,
              f"N={n}, K=N: nodes_visited {s['nodes_visited']}, want {want}")


def tree_bounds():
    n, nq, k = 3000, 301, 16
    shard = run(1, n, nq, k=k)
    s = shard["rank_stats"][0]
    check(k * nq <= s["distance_evals"] <= n * nq,
          f"distance_evals {s['distance_evals']} outside [K nq, N nq] = [{k * nq}, {n * nq}]")
    check(s["distance_evals"] < n * nq // 4, "the tree pruned less than 3/4 of the pairs")
    check(nq <= s["nodes_visited"] <= 2 * n * nq, f"nodes_visited {s['nodes_visited']} out of range")
    check(s["queries_answered"] == nq, f"answered {s['queries_answered']}, want {nq}")
    spatial = run(1, n, nq, k=k, extra=["--set", "mpi.partition=spatial"])
    check(counts(spatial) == counts(shard),
          f"spatial P=1 {counts(spatial)} != shard P=1 {counts(shard)}")


def spatial_sums():
    n, nq = 3000, 301
    one = run(1, n, nq)
    for p in (2, 3):
        r = run(p, n, nq)
        check(r["partition"]["name"] == "spatial", f"P={p}: partition {r['partition']['name']}")
        st = r["rank_stats"]
        check(sum(s["queries_phase1"] for s in st) == nq, f"P={p}: phase-1 queries != {nq}")
        for i, s in enumerate(st):
            check(s["queries_answered"] == s["queries_phase1"] + s["queries_phase2"],
                  f"P={p} rank {i}: answered != phase1 + phase2")
            check(s["distance_evals"] <= s["points"] * s["queries_answered"],
                  f"P={p} rank {i}: more keys than points x queries")
        check(total(r, "bytes_sent") == total(r, "bytes_received") > 0,
              f"P={p}: sent {total(r, 'bytes_sent')} != received {total(r, 'bytes_received')}")
        # Each rank's walk is bounded by its box, so the total keys stay near
        # one rank's: phase 2 adds, never multiplies by P.
        check(total(r, "distance_evals") < 2 * total(one, "distance_evals"),
              f"P={p}: {total(r, 'distance_evals')} keys, twice P=1's or more")
        w = r["work"]["distance_evals"]
        most = max(s["distance_evals"] for s in st)
        check(w["total"] == total(r, "distance_evals") and w["max"] == most,
              f"P={p}: work: block {w} disagrees with rank_stats")
        check(abs(w["imbalance"] - most * p / w["total"]) < 1e-4, f"P={p}: imbalance {w}")
    for merge in ("reduce", "reduce_scatter"):
        r = run(3, n, nq, extra=["--set", "mpi.partition=shard", "--set", f"mpi.merge={merge}"])
        list_bytes = 16 * 16  # K candidates of 16 bytes (key, label, id)
        check(total(r, "bytes_sent") == total(r, "bytes_received") == 2 * nq * list_bytes,
              f"shard {merge}: sent {total(r, 'bytes_sent')}, received "
              f"{total(r, 'bytes_received')}, want (P - 1) nq K 16 = {2 * nq * list_bytes}")


def repeatable():
    n, nq = 3000, 301
    base = run(3, n, nq, env={"POCL_MAX_PTHREAD_COUNT": "2"})
    again = run(3, n, nq, env={"POCL_MAX_PTHREAD_COUNT": "2"})
    check(counts(again) == counts(base), "two identical runs counted different work")
    other = run(3, n, nq, env={"POCL_MAX_PTHREAD_COUNT": "1"}, extra=["--set", "device.batch=40"])
    check(counts(other) == counts(base),
          f"one thread and 40-query batches: {counts(other)} != {counts(base)}")
    b1 = run(2, n, nq, engine="brute", env={"POCL_MAX_PTHREAD_COUNT": "1"},
             extra=["--set", "device.batch=64", "--set", "device.groups=2"])
    b2 = run(2, n, nq, engine="brute", env={"POCL_MAX_PTHREAD_COUNT": "2"})
    check(counts(b1) == counts(b2), f"brute force: {counts(b1)} != {counts(b2)}")


{"brute_pairs": brute_pairs, "tree_everything": tree_everything, "tree_bounds": tree_bounds,
 "spatial_sums": spatial_sums, "repeatable": repeatable}[CASE]()
if failures:
    sys.exit(1)
print(f"ok: work counters, {CASE}")
