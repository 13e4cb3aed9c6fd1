#!/usr/bin/python3
"""docs/cluster.md's model of the spatial partition against its counters.

For a weak-scaling series (n points and q queries per rank, uniform in the
unit cube, P = 1, 2, 4, ...; bench/model_calibration.sh) it sets, per P:

- x, the extra (phase-2) ranks per query: measured = the report's phase-2
  searches / queries; model = E[other boxes within r_K of the query], with
  the boxes the grid a round-robin median split makes of uniform points and
  r_K the K-th neighbour radius of a Poisson set of N = nP points
  ((4/3) pi r^3 N ~ Gamma(K)), by Monte Carlo (fixed seed);
- bytes per query: measured = the ranks' bytes_received / queries; model =
  (1 - 1/P) ((4D + 16K) + x (4D + 4 + 16K)) with the measured x (a query's
  row is 4D bytes, phase 2 adds its bound, a K-list is 16K bytes; rows a
  rank keeps are not counted);
- the work: distance evaluations and tree nodes per query, and the busiest
  rank's share (efficiency against P = 1 of the same n per rank is not
  defined in weak scaling; imbalance is).

usage: model_calibration.py K=REPORT_P1,REPORT_P2,... [K=...]
"""
import math
import sys

import numpy as np

D = 3


def load(path):
    """The report's rank_stats lines, read without PyYAML (a flow mapping
    per rank: `  - {rank: 0, points: 5, ...}`)."""
    ranks = []
    with open(path) as f:
        inside = False
        for line in f:
            if line.startswith("rank_stats:"):
                inside = True
                continue
            if inside:
                s = line.strip()
                if not s.startswith("- {"):
                    break
                fields = {}
                for part in s[3:].rstrip("}").split(","):
                    key, value = part.split(":", 1)
                    try:
                        fields[key.strip()] = int(value)
                    except ValueError:
                        pass
                ranks.append(fields)
    if not ranks:
        sys.exit(f"{path}: no rank_stats")
    return ranks


def grid(p):
    """Cells per dimension of a round-robin median split of uniform points
    into p = 2^m boxes: split l cuts dimension l mod D."""
    g = [1] * D
    for level in range(int(round(math.log2(p)))):
        g[level % D] *= 2
    return g


def model_x(p, n_total, k, samples=200_000, seed=12345):
    if p == 1:
        return 0.0
    rng = np.random.default_rng(seed)
    q = rng.random((samples, D))
    r = (3.0 * rng.gamma(k, 1.0, samples) / (4.0 * math.pi * n_total)) ** (1.0 / 3.0)
    g = grid(p)
    axes = [np.arange(gd) / gd for gd in g]
    lo = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, D)
    hi = lo + 1.0 / np.array(g)
    count = np.zeros(samples)
    for b in range(len(lo)):
        gap = np.maximum(np.maximum(lo[b] - q, q - hi[b]), 0.0)
        count += (np.sum(gap * gap, axis=1) <= r * r)
    return float(np.mean(count - 1.0))  # the home box is within any radius


def main(args):
    print("| K | P | N | queries | x measured | x model | measured / model | bytes/query "
          "measured | bytes/query model | evals/query | nodes/query | evals imbalance |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for arg in args:
        k, paths = arg.split("=", 1)
        k = int(k)
        for path in paths.split(","):
            st = load(path)
            p = len(st)
            n = sum(s["points"] for s in st)
            queries = sum(s["queries_owned"] for s in st)
            x = sum(s["queries_phase2"] for s in st) / queries
            xm = model_x(p, n, k)
            got = sum(s["bytes_received"] for s in st) / queries
            want = (1 - 1 / p) * ((4 * D + 16 * k) + x * (4 * D + 4 + 16 * k))
            evals = [s["distance_evals"] for s in st]
            nodes = sum(s["nodes_visited"] for s in st)
            ratio = f"{x / xm:.2f}" if xm > 0 else "-"
            print(f"| {k} | {p} | {n} | {queries} | {x:.4f} | {xm:.4f} | {ratio} | {got:.1f} | "
                  f"{want:.1f} | {sum(evals) / queries:.1f} | {nodes / queries:.1f} | "
                  f"{max(evals) / (sum(evals) / p):.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
