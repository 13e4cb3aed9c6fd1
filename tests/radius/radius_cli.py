"""task radius and radius_graph of `lbknn run` against an oracle of this
file's own (numpy, float32 keys in lbknn's fixed operation order,
docs/design.md section 2; no code shared with src/): every metric, one
radius and per-query radii (query.radii), ties at exactly r (integer grid
points, duplicates among them), empty lists, the cap's two behaviours,
count-only; every run's files byte-identical to the one-rank run's across
ranks, partitions, engines and batch sizes; the truncated flags
(output.truncated) against the oracle's; bad radii refused with one line
and exit 2, before any output appears.

usage: radius_cli.py LBKNN MPIEXEC RANKS... [--wide] [--case N [BATCH]]
                     [--part light|rest]
  RANKS: the rank counts to run (1 first); --wide: every partition and
  engine at each (the slow tier), else a covering subset; --case N: case N
  of CASES alone, every batch size BATCH (tests/multihost: across hosts,
  where each batch's exchanges cost milliseconds); --part: the default
  run in two halves, `light` (LIGHT's cases, the fill rounds, the capped
  list over the budget and the refusals: every host path of the CLI's
  radius tasks, the sanitized pass's part) and `rest` (the other cases)."""
import os
import sys
import tempfile

import numpy as np
import scipy.sparse

from cli_runner import Runner

SEED = 40


def keys_of(metric, q, r):
    """Q x N keys, each a sequential float32 sum over the dimensions."""
    s = np.zeros((len(q), len(r)), dtype=np.float32)
    dot = metric in ("ip", "cosine")
    for j in range(q.shape[1]):
        if dot:
            t = q[:, None, j] * r[None, :, j]
            s = s + t
        else:
            d = q[:, None, j] - r[None, :, j]
            if metric == "l2":
                t = d * d
                s = s + t
            elif metric == "l1":
                s = s + np.abs(d)
            else:
                s = np.maximum(s, np.abs(d))
    return -s if dot else s


def normalized(x):
    out = x.copy()
    for i, row in enumerate(x):
        s = 0.0
        for v in row:
            s = s + float(v) * float(v)
        n = np.sqrt(s)
        if n > 0:
            out[i] = np.array([float(v) / n for v in row], dtype=np.float32)
    return out


def distance_of(metric, key):
    if metric == "l2":
        return np.sqrt(key)
    if metric == "ip":
        return -key
    if metric == "cosine":
        return np.clip(np.float32(1) + key, np.float32(0), np.float32(2))
    return key


def oracle(metric, ref, queries, radii, self_search, cap, truncate):
    if metric == "cosine":
        ref, queries = normalized(ref), normalized(queries)
    keys = keys_of(metric, queries, ref)
    dist = distance_of(metric, keys).astype(np.float32)
    inside = dist >= radii[:, None] if metric == "ip" else dist <= radii[:, None]
    if self_search:
        np.fill_diagonal(inside, False)
    counts = inside.sum(1).astype(np.int64)
    indptr, indices, data = [0], [], []
    for q in range(len(queries)):
        ids = np.nonzero(inside[q])[0]
        ids = ids[np.lexsort((ids, keys[q, ids]))]
        if truncate and cap and len(ids) > cap:
            ids = ids[:cap]
        indices.extend(ids.tolist())
        data.extend(dist[q, ids].tolist())
        indptr.append(len(indices))
    return counts, np.array(indptr), np.array(indices), np.array(data, dtype=np.float32)


def job_text(task, metric, engine, partition, radius, radii, cap, overflow, count_only, batch,
             out, merge="reduce", query="q.npy"):
    lines = [f"task: {task}", "reference: {path: ref.npy}"]
    query = [] if task == "radius_graph" else [f"path: {query}"]
    if radii:
        query.append(f"radii: {radii}")
    if query:
        lines.append("query: {" + ", ".join(query) + "}")
    lines.append(f"knn: {{metric: {metric}, engine: {engine}, radius: {radius}}}")
    lines.append(f"radius: {{max_neighbors: {cap}, overflow: {overflow}, "
                 f"count_only: {'true' if count_only else 'false'}}}")
    lines.append(f"device: {{batch: {batch}, memory_mb: 1}}")
    lines.append(f"mpi: {{partition: {partition}, merge: {merge}}}")
    outs = [f"counts: {out}.counts.npy", f"truncated: {out}.truncated.npy"]
    if not count_only:
        outs.append(f"graph: {out}.npz")
    lines.append("output: {" + ", ".join(outs) + "}")
    return "\n".join(lines) + "\n"


def check_files(r, name, out, want, count_only, cap, truncate):
    counts, indptr, indices, data = want
    got_counts = np.load(os.path.join(r.work, out + ".counts.npy"))
    if got_counts.dtype != np.int64 or not np.array_equal(got_counts, counts):
        r.fail(f"{name}: counts differ from the oracle's")
        return
    flags = np.load(os.path.join(r.work, out + ".truncated.npy"))
    cut = (counts > cap) if truncate and cap else np.zeros(len(counts), dtype=bool)
    if flags.dtype != np.bool_ or not np.array_equal(flags, cut):
        r.fail(f"{name}: the truncated flags differ from the oracle's")
        return
    if truncate and cap and not count_only and not cut.any():
        r.fail(f"{name}: no list was truncated: the case tests nothing")
    if count_only:
        if os.path.exists(os.path.join(r.work, out + ".npz")):
            r.fail(f"{name}: count_only wrote a graph")
        return
    g = scipy.sparse.load_npz(os.path.join(r.work, out + ".npz"))
    if (not np.array_equal(g.indptr, indptr) or not np.array_equal(g.indices, indices)
            or g.data.tobytes() != data.tobytes()):
        bad = np.nonzero(np.diff(g.indptr) != np.diff(indptr))[0]
        r.fail(f"{name}: the graph differs from the oracle's (rows {bad[:5]})")


def same_bytes(r, name, out, first):
    for ext in (".counts.npy", ".truncated.npy", ".npz"):
        a, b = os.path.join(r.work, first + ext), os.path.join(r.work, out + ext)
        if os.path.exists(a) and open(a, "rb").read() != open(b, "rb").read():
            r.fail(f"{name}: {out}{ext} is not byte-identical to {first}{ext}")


# (task, metric, radius, per-query radii, cap, overflow, count_only)
CASES = [
    ("radius", "l2", 2, False, 0, "error", False),
    ("radius", "l2", 0, True, 0, "error", False),
    ("radius_graph", "l2", 1.5, False, 6, "truncate", False),
    ("radius", "l1", 3, False, 0, "error", True),
    ("radius_graph", "linf", 1, True, 0, "error", False),
    ("radius", "ip", 5, False, 0, "error", False),
    ("radius_graph", "ip", -3, False, 4, "truncate", False),
    ("radius", "cosine", 0.2, False, 0, "error", False),
    ("radius_graph", "cosine", 0.3, False, 0, "error", False),
]

LIGHT = (1, 2, 3)  # per-query radii; a self search truncating; count-only


def layouts(metric, ranks, wide):
    """(engine, partition, batch) to run at `ranks`."""
    tree = metric in ("l2", "l1", "linf")
    if ranks == 1:
        return [("kdtree" if tree else "brute", "shard", 7)] + (
            [("brute", "shard", 1000)] if tree else [])
    out = [("brute", "shard", 13)]
    if tree:
        out.append(("kdtree", "spatial", 5))
    if wide or not tree:
        out.append(("brute", "replicate", 11))
    if wide and tree:
        out += [("kdtree", "shard", 9), ("brute", "spatial", 1000)]
    return out


def refusals(r):
    """Bad radii: exit 2, one line naming the key or file and row, no output."""
    bad = [("knn_negative", "knn: {radius: -1}", "", "knn.radius"),
           ("knn_nan", "knn: {radius: nan}", "", "knn.radius"),
           ("radii_length", "knn: {radius: 1}", "short.npy", "short.npy holds 3 numbers"),
           ("radii_negative", "knn: {radius: 1}", "negative.txt", "negative.txt:2")]
    bad += [("knn_beyond_float", "knn: {radius: 1e39}", "", "knn.radius must be a finite number"),
            ("radii_tiny_negative", "knn: {radius: 1}", "tiny.txt", "tiny.txt:3: -1e-50 is not "
             "a radius: negative"),
            ("radii_beyond_float", "knn: {radius: 1}", "huge.npy", "huge.npy:2: 1e+39 is not a "
             "radius: not finite as a float")]
    n = len(np.load(os.path.join(r.work, "q.npy")))
    with open(os.path.join(r.work, "tiny.txt"), "w") as f:
        f.write("1\n1\n-1e-50\n" + "1\n" * (n - 3))
    np.save(os.path.join(r.work, "huge.npy"), np.array([1] + [1e39] * (n - 1), dtype=np.float64))
    for name, knn, radii, says in bad:
        query = "{path: q.npy" + (f", radii: {radii}" if radii else "") + "}"
        job = (f"task: radius\nreference: {{path: ref.npy}}\nquery: {query}\n{knn}\n"
               f"output: {{graph: refused.npz, counts: refused.counts.npy}}\n")
        p = r.run("refuse_" + name, 1, job, expect=2)
        lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
        if len(lines) != 1 or says not in lines[0]:
            r.fail(f"refuse_{name}: expected one line naming '{says}', got {lines}")
        for f in ("refused.npz", "refused.counts.npy"):
            if os.path.exists(os.path.join(r.work, f)):
                r.fail(f"refuse_{name}: {f} was written")
    job = ("task: radius\nreference: {path: ref.npy}\nquery: {path: q.npy}\n"
           "knn: {radius: 3}\nradius: {max_neighbors: 2}\noutput: {graph: capped.npz}\n")
    p = r.run("refuse_cap", 1, job, expect=2)
    if "query row 0 has" not in p.stdout + p.stderr:
        r.fail(f"refuse_cap: the message does not name the query: {p.stdout + p.stderr}")


def rounds(r, ref, ranks, rng):
    """Fill rounds: one batch of 150 queries whose lists (about 34 000
    entries) exceed device.memory_mb = 1 (13 797 entries of 76 bytes; a
    third of that per owner at P = 3), so the fill takes several rounds;
    the first 50 queries lie off the grid with radius 0.1 (no neighbour),
    so their owner at P = 3 (rank 0 of reduce_scatter, of replicate and of
    spatial's query slices) has one round of empty lists and then joins
    the others' rounds with none. Against the oracle, byte-identical."""
    off = (rng.integers(0, 6, size=(50, 3)) - 2.5).astype(np.float32)
    on = (rng.integers(0, 7, size=(100, 3)) - 3).astype(np.float32)
    queries = np.concatenate([off, on])
    radii = np.concatenate([np.full(50, 0.1), np.full(100, 6.5)]).astype(np.float32)
    np.save(os.path.join(r.work, "q_rounds.npy"), queries)
    np.save(os.path.join(r.work, "radii_rounds.npy"), radii)
    want = oracle("l2", ref, queries, radii, False, 0, False)
    runs = [(1, "brute", "shard", "reduce"), (1, "kdtree", "shard", "reduce")]
    if 3 in ranks:
        runs += [(3, "brute", "shard", "reduce_scatter"), (3, "brute", "replicate", "reduce"),
                 (3, "kdtree", "spatial", "reduce")]
    print(f"rounds: {want[0].sum()} entries, {want[0][:50].sum()} in the first 50 lists")
    first = None
    for p, engine, partition, merge in runs:
        out = f"rounds_p{p}_{engine}_{partition}_{merge}"
        job = job_text("radius", "l2", engine, partition, 0, "radii_rounds.npy", 0, "error",
                       False, 1000, out, merge, "q_rounds.npy")
        before = r.failed
        r.run(out, p, job)
        if r.failed == before:
            check_files(r, out, out, want, False, 0, False)
            if first is None:
                first = out
            else:
                same_bytes(r, out, out, first)
        print(f"{out}: {'ok' if r.failed == before else 'FAILED'}")


def capped_over_budget(r, ranks, rng):
    """A capped list longer than the budget holds: 20 000 grid references
    (many ties at every key), 12 queries whose ball holds every one,
    device.memory_mb = 1 (8 738 entries), max_neighbors 10, overflow
    truncate: each holder sends its first 10 (11 for a self search) by
    (key, id), so the search succeeds, with the oracle's first 10 and the
    true counts; byte-identical over ranks and partitions."""
    ref = (rng.integers(0, 5, size=(20000, 3)) - 2).astype(np.float32)
    queries = (rng.integers(0, 5, size=(12, 3)) - 2).astype(np.float32)
    np.save(os.path.join(r.work, "ref_big.npy"), ref)
    np.save(os.path.join(r.work, "q_big.npy"), queries)
    want = oracle("l2", ref, queries, np.full(len(queries), 8, np.float32), False, 10, True)
    runs = [(1, "kdtree", "shard", "reduce"), (1, "brute", "shard", "reduce")]
    if 3 in ranks:
        runs += [(3, "brute", "shard", "reduce_scatter"), (3, "kdtree", "spatial", "reduce")]
    first = None
    for p, engine, partition, merge in runs:
        out = f"capped_p{p}_{engine}_{partition}_{merge}"
        job = job_text("radius", "l2", engine, partition, 8, "", 10, "truncate", False, 1000,
                       out, merge, "q_big.npy").replace("ref.npy", "ref_big.npy")
        before = r.failed
        r.run(out, p, job)
        if r.failed == before:
            check_files(r, out, out, want, False, 10, True)
            if first is None:
                first = out
            else:
                same_bytes(r, out, out, first)
        print(f"{out}: {'ok' if r.failed == before else 'FAILED'}")


def double_radius(r):
    """A radius given as a double (knn.radius, a float64 or text radii file)
    is that number's ball: a point at float32 0.1 (0.10000000149) lies
    beyond radius 0.1 (it did when the radius was rounded to the nearest
    float). Three points against the default knn.k = 5: a radius task reads
    no k."""
    ref = np.array([[0.1, 0, 0], [0.05, 0, 0], [0.2, 0, 0]], dtype=np.float32)
    np.save(os.path.join(r.work, "ref3.npy"), ref)
    np.save(os.path.join(r.work, "q1.npy"), np.zeros((1, 3), dtype=np.float32))
    np.save(os.path.join(r.work, "r1.npy"), np.array([0.1]))
    with open(os.path.join(r.work, "r1.txt"), "w") as f:
        f.write("0.1\n")
    for how, knn, radii in (("knn.radius", "0.1", ""), ("float64 radii", "1", ", radii: r1.npy"),
                            ("text radii", "1", ", radii: r1.txt")):
        job = (f"task: radius\nreference: {{path: ref3.npy}}\nquery: {{path: q1.npy{radii}}}\n"
               f"knn: {{radius: {knn}}}\noutput: {{graph: exact.npz}}\n")
        before = r.failed
        r.run("exact", 1, job)
        if r.failed == before:
            g = scipy.sparse.load_npz(os.path.join(r.work, "exact.npz"))
            if g.indices.tolist() != [1]:
                r.fail(f"radius 0.1 as {how}: neighbours {g.indices.tolist()}, want [1]")
        print(f"radius 0.1 as {how}: {'ok' if r.failed == before else 'FAILED'}")


def main():
    lbknn, mpiexec = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    wide = "--wide" in args
    only, batch_of = None, None
    if "--case" in args:
        at = args.index("--case")
        only = int(args[at + 1])
        given = args[at + 2:at + 3]
        batch_of = int(given[0]) if given and given[0].isdigit() else None
        del args[at:at + 2 + (batch_of is not None)]
    part = None
    if "--part" in args:
        at = args.index("--part")
        part = args[at + 1]
        del args[at:at + 2]
    ranks = [int(a) for a in args if a != "--wide"]
    rng = np.random.default_rng(SEED)
    print(f"radius_cli: seed {SEED}, ranks {ranks}{', wide' if wide else ''}")
    ref = (rng.integers(0, 7, size=(400, 3)) - 3).astype(np.float32)
    queries = (rng.integers(0, 7, size=(50, 3)) - 3).astype(np.float32)
    with tempfile.TemporaryDirectory() as work:
        np.save(os.path.join(work, "ref.npy"), ref)
        np.save(os.path.join(work, "q.npy"), queries)
        radii_q = rng.integers(0, 4, size=len(queries)).astype(np.float32)
        radii_r = rng.integers(0, 3, size=len(ref)).astype(np.float32)
        np.save(os.path.join(work, "radii_q.npy"), radii_q)
        with open(os.path.join(work, "radii_r.txt"), "w") as f:
            f.write("\n".join(str(int(v)) for v in radii_r) + "\n")
        np.save(os.path.join(work, "short.npy"), np.ones(3, dtype=np.float32))
        with open(os.path.join(work, "negative.txt"), "w") as f:
            f.write("1\n-2\n" + "1\n" * (len(queries) - 2))
        r = Runner(lbknn, mpiexec, work)
        for i, (task, metric, radius, per_query, cap, overflow, count_only) in enumerate(CASES):
            if only is not None and i != only:
                continue
            if part is not None and (i in LIGHT) != (part == "light"):
                continue
            self_search = task == "radius_graph"
            pts = ref if self_search else queries
            radii = (radii_r if self_search else radii_q) if per_query else None
            want = oracle(metric, ref, pts, radii if per_query else np.full(len(pts), radius,
                                                                            np.float32),
                          self_search, cap, overflow == "truncate")
            first = None
            for p in ranks:
                for engine, partition, batch in layouts(metric, p, wide):
                    batch = batch_of or batch
                    out = f"c{i}_p{p}_{engine}_{partition}_{batch}"
                    name = f"case {i} ({task} {metric}) P={p} {engine} {partition} batch {batch}"
                    job = job_text(task, metric, engine, partition, radius,
                                   ("radii_r.txt" if self_search else "radii_q.npy")
                                   if per_query else "", cap, overflow, count_only, batch, out)
                    before = r.failed
                    r.run(out, p, job)
                    if r.failed == before:
                        check_files(r, name, out, want, count_only, cap,
                                    overflow == "truncate")
                        if first is None:
                            first = out
                        else:
                            same_bytes(r, name, out, first)
                    print(f"{name}: {'ok' if r.failed == before else 'FAILED'}")
        light = only is None and part != "rest"
        if light:
            rounds(r, ref, ranks, rng)
            capped_over_budget(r, ranks, rng)
        if 1 in ranks and light:
            before = r.failed
            refusals(r)
            print(f"refusals: {'ok' if r.failed == before else 'FAILED'}")
        if 1 in ranks and only is None and part != "light":
            double_radius(r)
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
