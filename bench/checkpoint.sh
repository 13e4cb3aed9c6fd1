#!/bin/bash
# Checkpoint overhead: the search phase (report `search:`) of one job
# without checkpoints, with run.checkpoint at the default interval (900 s:
# only the per-batch agreement) and at run.checkpoint_s: 1 (a checkpoint
# every second: sync and CRC of what the second wrote). ROUNDS interleaved
# rounds of the three (the order rotating from round to round, so that no
# variant always runs first); prints each variant's median and the median
# of the per-round ratios to the round's run without checkpoints, and the
# share of each run's search phase spent in the checkpoint hook itself
# (the report's timings_s.checkpoint), which run-to-run noise does not
# blur.
# Usage: bench/checkpoint.sh LBKNN [ROUNDS (7)] [--set ...]
bin=${1:?usage: bench/checkpoint.sh LBKNN [ROUNDS] [--set ...]}
rounds=${2:-7}
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
job=(--set synthetic.points=200000 --set synthetic.queries=400000 --set synthetic.dim=8
     --set device.batch=4000 --set mpi.partition=shard --set output.predictions=p.csv
     --set output.probabilities=pr.csv --set output.neighbors=n.npy --set output.distances=d.fvecs
     --set output.report=r.yaml "$@")
variants=("" "--set run.checkpoint=ck" "--set run.checkpoint=ck --set run.checkpoint_s=1")
: > times
for r in $(seq "$rounds"); do
    for i in 0 1 2; do
        v=$(( (i + r) % 3 ))
        # shellcheck disable=SC2086 # the variant is a list of words
        "$bin" run -q "${job[@]}" ${variants[$v]} || exit 1
        echo "$r $v $(awk '$1 == "search:" {print $2}' r.yaml)" \
            "$(awk '/^  checkpoint: .* checkpoints written$/ {print $2, $(NF - 2)}' r.yaml)" >> times
    done
done
/usr/bin/python3 - times <<'PY'
import statistics, sys
t = {}
hook = {}
for line in open(sys.argv[1]):
    r, v, s, *ck = line.split()
    t.setdefault(int(v), {})[int(r)] = float(s)
    if ck:
        hook.setdefault(int(v), []).append((float(ck[0]) / float(s), int(ck[1])))
names = ["none", "default (900 s)", "checkpoint_s=1"]
for v in range(3):
    med = statistics.median(t[v].values())
    ratios = [t[v][r] / t[0][r] for r in t[0]]
    print(f"{names[v]:16s} median {med:.3f} s  per-round ratio to none: median "
          f"{statistics.median(ratios):.4f} (range {min(ratios):.3f}-{max(ratios):.3f})")
    if v in hook:
        share = [h[0] for h in hook[v]]
        print(f"{'':16s} inside the run, the checkpoint hook's share of search: median "
              f"{100 * statistics.median(share):.3f} % (range {100 * min(share):.3f}-"
              f"{100 * max(share):.3f} %), {statistics.median([h[1] for h in hook[v]])} "
              "checkpoints a run")
PY
