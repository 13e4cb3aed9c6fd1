#!/usr/bin/python3
"""The table of bench/work_scaling.sh: per data set and P, from each run's
report (rank_stats), the work-efficiency work(1) / (P x max_r work_r(P)) and
the imbalance max / mean of distance_evals and nodes_visited, and the
phase-2 share of the queries answered.

usage: work_scaling.py KIND=REPORT ...   (the P = 1 report of each KIND first)
"""
import sys

import yaml

FIELDS = ("distance_evals", "nodes_visited")


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def main(args):
    runs = {}
    for a in args:
        kind, path = a.split("=", 1)
        r = load(path)
        runs.setdefault(kind, []).append((len(r["rank_stats"]), r))
    print("| data | P | evals total | evals max rank | evals efficiency | evals imbalance "
          "| nodes efficiency | nodes imbalance | answered / queries |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, rs in runs.items():
        rs.sort(key=lambda x: x[0])
        p1, one = rs[0]
        if p1 != 1:
            sys.exit(f"{kind}: no P = 1 run to measure against")
        base = {f: sum(s[f] for s in one["rank_stats"]) for f in FIELDS}
        for p, r in rs:
            st = r["rank_stats"]
            row = [kind, str(p)]
            cells = {}
            for f in FIELDS:
                vals = [s[f] for s in st]
                most, mean = max(vals), sum(vals) / len(vals)
                cells[f] = (sum(vals), most, base[f] / (p * most) if most else 0.0,
                            most / mean if mean else 1.0)
            answered = sum(s["queries_answered"] for s in st)
            queries = sum(s["queries_phase1"] for s in st)
            e, n = cells["distance_evals"], cells["nodes_visited"]
            row += [str(e[0]), str(e[1]), f"{e[2]:.3f}", f"{e[3]:.3f}", f"{n[2]:.3f}",
                    f"{n[3]:.3f}", f"{answered / queries:.3f}"]
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
