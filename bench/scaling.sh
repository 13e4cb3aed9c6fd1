#!/bin/bash
# Strong and weak scaling of `lbknn run` over MPI ranks on one machine.
#
#   bench/scaling.sh [--quick] [--repeat N] [--fashion-repeat N] [--no-fashion]
#                    [--spatial-only]
#
# Workloads: 3-D synthetic blobs (1e6 references, 1e5 queries, K = 16, k-d
# tree) and Fashion-MNIST (60000 x 784, 10000 queries, K = 5, brute force);
# weak scaling: 3-D with 5e5 references per rank. The spatial partition
# (mpi.partition: auto, i.e. spatial for the tree on 2+ ranks) on 3-D files
# from bench_points: 1e6 uniform and 1e6 clustered references, 1e5 queries,
# K = 16, P = 1, 2, 4, rounds interleaved; weak scaling 1e6 references and
# 1e5 queries per rank; tiny runs for each P's memory baseline (the process
# with PoCL and Open MPI loaded). --spatial-only runs just that part. Two
# ways to give ranks compute:
#   core   every rank's PoCL device gets one thread (POCL_MAX_PTHREAD_COUNT=1):
#          the stand-in for "one device per rank", so P ranks have P devices
#          as long as P <= cores;
#   node   lbknn's own rule: the node's cores divided among its ranks, so
#          every P shares the same cores (the case of a CPU-only node);
#          mpirun --bind-to none, so one rank may use every core.
#   lastcore P = 1 on the machine's last core instead of core 0 (spatial
#          runs only): the cores of a VM need not be equally fast, and a
#          P = 2 run waits for its rank on the slower one.
#   pair   two independent P = 1 runs at once, one pinned to each of the
#          first two cores (spatial runs only): the weak-scaling ceiling of
#          the machine itself, what two ranks that never talk lose to sharing
#          it (memory bandwidth, caches, the hypervisor);
#   onecore  every rank on the same single core, one thread each, waiting
#          ranks yielding (spatial runs only): the query phase then takes
#          about the ranks' total work, so P = 1 over P = 2 is the work ratio
#          (an upper bound of the overhead), free of what other jobs on a
#          shared machine do to the second core.
# Runs with more ranks than cores are marked oversubscribed.
#
# Each run's report goes to bench/out/scaling/, the table (medians over the
# repeats) to bench/out/scaling/table.md and stdout; bench/results/scaling.md
# is a recorded run with its analysis, written by hand from that table. LBKNN picks the
# binary (default: build/lbknn, then build-mpi/lbknn).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
repeat=3 quick=0 fashion=1 fashion_repeat=1 others=1
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 repeat=1 ;;
    --repeat) repeat=$2; shift ;;
    --fashion-repeat) fashion_repeat=$2; shift ;;
    --no-fashion) fashion=0 ;;
    --spatial-only) others=0 fashion=0 ;;
    *) echo "usage: $0 [--quick] [--repeat N] [--fashion-repeat N] [--no-fashion] [--spatial-only]" >&2
       exit 2 ;;
    esac
    shift
done
if [ -z "${LBKNN:-}" ]; then
    for c in "$root/build/lbknn" "$root/build-mpi/lbknn"; do [ -x "$c" ] && LBKNN=$c && break; done
fi
[ -x "${LBKNN:-}" ] || { echo "no lbknn binary; set LBKNN" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
out=$root/bench/out/scaling
mkdir -p "$out"
rm -f "$out"/*.yaml "$out/runs.tsv"

if [ "$quick" = 1 ]; then
    pts=200000 qs=20000 weak=100000
else
    pts=1000000 qs=100000 weak=500000
fi
fm=/usr/share/datasets/fashion-mnist
d3=(--set synthetic.dim=3 --set synthetic.queries=$qs --set knn.k=16 --set knn.engine=kdtree)

# name workload P mode round [run args...]: one run, its report and load
run_once() {
    local name=$1 workload=$2 np=$3 mode=$4 i=$5
    shift 5
    local report=$out/$name.r$i.yaml load
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$mode" = core ]; then
        POCL_MAX_PTHREAD_COUNT=1 mpirun -x POCL_MAX_PTHREAD_COUNT -n "$np" \
            "$LBKNN" run --quiet "$@" --set "output.report=$report"
    elif [ "$mode" = lastcore ]; then
        POCL_MAX_PTHREAD_COUNT=1 taskset -c "$(($(nproc) - 1))" mpirun --bind-to none \
            -x POCL_MAX_PTHREAD_COUNT -n "$np" "$LBKNN" run --quiet "$@" --set "output.report=$report"
    elif [ "$mode" = pair ]; then
        local c
        for c in 0 1; do
            POCL_MAX_PTHREAD_COUNT=1 taskset -c "$c" mpirun --bind-to none \
                -x POCL_MAX_PTHREAD_COUNT -n 1 "$LBKNN" run --quiet "$@" \
                --set "output.report=${report%.yaml}.core$c.yaml" &
        done
        wait
        report="${report%.yaml}.core0.yaml,${report%.yaml}.core1.yaml"
    elif [ "$mode" = onecore ]; then
        # A rank waiting in MPI yields the core instead of spinning on it.
        POCL_MAX_PTHREAD_COUNT=1 taskset -c 0 mpirun --bind-to none --mca mpi_yield_when_idle 1 \
            -x POCL_MAX_PTHREAD_COUNT -n "$np" "$LBKNN" run --quiet "$@" --set "output.report=$report"
    else
        # --bind-to none: Open MPI binds each of up to two ranks to one
        # core, which would leave a single rank one core of the node.
        env -u POCL_MAX_PTHREAD_COUNT mpirun --bind-to none -n "$np" \
            "$LBKNN" run --quiet "$@" --set "output.report=$report"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$workload" "$np" "$mode" "$load" "$report" \
        >>"$out/runs.tsv"
    echo "done: $name run $i (load before: $load)" >&2
}

# name workload P mode [run args...]: `repeat` runs back to back
run() {
    local name=$1 workload=$2 np=$3 mode=$4
    shift 4
    for ((i = 1; i <= repeat; i++)); do
        run_once "$name" "$workload" "$np" "$mode" "$i" "$@"
    done
}

# The spatial partition: files from bench_points, rounds interleaved (P = 1,
# 2, 4 one after the other in every round) so that a slow spell of the
# shared machine hits every P alike.
spatial_runs() {
    local data=$out/data gen
    gen=$(dirname "$LBKNN")/bench/bench_points
    mkdir -p "$data"
    local sp=(--set knn.k=16 --set knn.engine=kdtree)
    "$gen" "$data/uniform" uniform "$pts" "$qs"
    "$gen" "$data/clustered" clustered "$pts" "$qs"
    "$gen" "$data/weak2" uniform $((2 * pts)) $((2 * qs))
    "$gen" "$data/tiny" uniform 1000 100
    for ((i = 1; i <= repeat; i++)); do
        for np in 1 2 4; do
            run_once "spatial-uniform-p$np" spatial-uniform "$np" core "$i" \
                "$data/uniform/job.yaml" "${sp[@]}"
            run_once "spatial-clustered-p$np" spatial-clustered "$np" core "$i" \
                "$data/clustered/job.yaml" "${sp[@]}"
        done
        run_once spatial-weak-p2 spatial-weak 2 core "$i" "$data/weak2/job.yaml" "${sp[@]}"
        run_once spatial-lastcore-p1 spatial-lastcore 1 lastcore "$i" "$data/uniform/job.yaml" \
            "${sp[@]}"
        if [ "$(nproc)" -ge 2 ]; then
            run_once spatial-pair-p1 spatial-pair 1 pair "$i" "$data/uniform/job.yaml" "${sp[@]}"
        fi
        for np in 1 2; do
            run_once "spatial-onecore-p$np" spatial-onecore "$np" onecore "$i" \
                "$data/uniform/job.yaml" "${sp[@]}"
        done
        for np in 1 2 4; do
            run_once "spatial-base-p$np" spatial-base "$np" core "$i" "$data/tiny/job.yaml" "${sp[@]}"
        done
    done
    rm -rf "$data"
}

spatial_runs
repeats=$repeat
if [ "$others" = 1 ]; then
for mode in core node; do
    for np in 1 2 4; do
        run "3d-strong-$mode-p$np" 3d-strong "$np" "$mode" "${d3[@]}" --set synthetic.points=$pts \
            --set mpi.partition=shard
    done
done
# Replicated references, queries split over ranks (mpi.partition: replicate):
# the tree's query phase is per query, so this is the way it scales.
for np in 1 2 4; do
    run "3d-replicate-core-p$np" 3d-replicate "$np" core "${d3[@]}" \
        --set synthetic.points=$pts --set mpi.partition=replicate
done
for np in 1 2 4; do
    run "3d-weak-core-p$np" 3d-weak "$np" core "${d3[@]}" \
        --set synthetic.points=$((weak * np)) --set mpi.partition=shard
done
# One rank with one shard's worth of references, shards run one after the
# other: the query time a rank would need with a device of its own, free of
# the contention between ranks sharing this machine's cores. Speedup here =
# t(N) / t(N/P) is the query-phase speedup P dedicated devices can reach.
for np in 1 2 4; do
    run "3d-shard-of-p$np" 3d-shard 1 core "${d3[@]}" --set synthetic.points=$((pts / np))
done
if [ "$fashion" = 1 ]; then
    # Fashion-MNIST's shape (784-d, 60000 x 10000, K = 5, brute force) on
    # synthetic blobs, whose size can be cut into shards.
    for np in 1 2; do
        run "784d-shard-of-p$np" 784d-shard 1 core --set synthetic.dim=784 \
            --set synthetic.points=$((60000 / np)) --set synthetic.queries=10000 \
            --set knn.k=5 --set knn.engine=brute
    done
fi
repeats="$repeat (Fashion-MNIST: $fashion_repeat)"
if [ "$fashion" = 1 ] && [ -r "$fm/train-images-idx3-ubyte.gz" ]; then
    # Fashion-MNIST runs take tens of seconds each: fewer repeats by default.
    repeat=$fashion_repeat
    for mode in core node; do
        for np in 1 2; do
            run "fashion-$mode-p$np" fashion "$np" "$mode" "$root/configs/fashion-mnist.yaml" \
                --set output.predictions= --set output.neighbors= --set output.distances=
        done
    done
fi

# The merge alone (docs/cluster.md's model): operator throughput and
# lbk_merge_candidates for B = 1e5 queries, K = 16.
merge_bin=$(dirname "$LBKNN")/bench/scaling_merge
for np in 1 2 4; do
    mpirun -n "$np" "$merge_bin" 100000 16
done | tee "$out/merge.txt"
fi

/usr/bin/python3 - "$out/runs.tsv" "$(nproc)" "$out/table.md" "$repeats" <<'PY'
import re, statistics, sys, datetime, platform
runs_path, cores, md_path, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def parse(paths):
    """The few report keys we need; the report is flat enough for regexes.
    Several reports (a pair of runs at once): each key's largest."""
    if ',' in paths:
        parts = [parse(p) for p in paths.split(',')]
        return {k: max(p[k] for p in parts) for k in parts[0]}
    text = open(paths).read()
    get = lambda pat: float(re.search(pat, text, re.M).group(1))
    phase = lambda p, s: get(r'^\s+%s: \{min: [\d.]+, avg: [\d.]+, max: ([\d.]+)\}' % p) if s == 'max' \
        else get(r'^\s+%s: \{min: [\d.]+, avg: ([\d.]+)' % p)
    ranks = re.findall(r'^  - \{rank: \d+, points: \d+, .*peak_rss_bytes: (\d+), '
                       r'peak_device_bytes: (\d+|null)\}', text, re.M)
    extra = re.search(r'^spatial: \{.*phase2_fraction: ([\d.]+)\}', text, re.M)
    return dict(query=phase('query', 'max'), merge=phase('merge', 'max'),
                build=phase('build', 'max'), total=get(r'^\s+total: ([\d.]+)'),
                search=get(r'^\s+search: ([\d.]+)'),
                bytes=get(r'^merge: \{mode: \w+, bytes: (\d+)\}'),
                rss=max(int(a) for a, _ in ranks) / 2**20,
                device=max(0 if b == 'null' else int(b) for _, b in ranks) / 2**20,
                phase2=float(extra.group(1)) if extra else 0.0)

rows = {}
for line in open(runs_path):
    name, workload, np_, mode, load, report = line.rstrip('\n').split('\t')
    r = rows.setdefault(name, dict(workload=workload, np=int(np_), mode=mode, loads=[], runs=[]))
    r['loads'].append(float(load))
    r['runs'].append(parse(report))

med = lambda r, k: statistics.median(x[k] for x in r['runs'])
best = lambda r, k: min(x[k] for x in r['runs'])
base = {}
for name, r in rows.items():
    if r['np'] == 1 and not r['workload'].endswith('-shard'):
        base[(r['workload'], r['mode'])] = r
    # Sequential shard runs are all one rank; the P they stand for is in the
    # name, and the full-size run is their baseline.
    m = re.search(r'-shard-of-p(\d+)$', name)
    if m:
        r['np'] = int(m.group(1))
        r['mode'] = 'shard'
        if r['np'] == 1:
            base[(r['workload'], 'shard')] = r

def spatial_table():
    """The spatial partition's rows: speedups against its own P = 1 run (the
    plain one-rank path), memory against P = 1 and above each P's baseline."""
    sp = {n: r for n, r in rows.items() if r['workload'].startswith('spatial-')}
    if not sp:
        return []
    base_rss = {r['np']: med(r, 'rss') for r in sp.values() if r['workload'] == 'spatial-base'}
    out = ['| run | P | query max (s) | query speedup | search (s) | search speedup | '
           'build max (s) | build speedup | phase 2 | peak RSS max (MiB) | RSS above base '
           '(MiB) | RSS ratio (above base) | device peak (MiB) | device ratio | load before |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    # Times: median (fastest) over the rounds; speedups: of the medians (of
    # the fastest runs, the least disturbed by other jobs on the machine).
    for name, r in sp.items():
        if r['workload'] == 'spatial-base':
            continue
        kind = 'uniform' if r['workload'] in ('spatial-weak', 'spatial-lastcore', 'spatial-pair') \
            else r['workload'][len('spatial-'):]
        if r['workload'] == 'spatial-onecore':
            name += ' (one core: work ratio)'
        if r['workload'] == 'spatial-lastcore':
            name += ' (P = 1 on core %d: speed against core 0)' % (cores - 1)
        if r['workload'] == 'spatial-pair':
            name += ' (two P = 1 runs at once, cores 0 and 1: the slower, against one alone)'
        b = sp.get('spatial-%s-p1' % kind)
        weak = r['workload'] == 'spatial-weak'
        form = 'efficiency %.2f (%.2f)' if weak else '%.2fx (%.2fx)'
        ratio = lambda k: form % (med(b, k) / med(r, k), best(b, k) / best(r, k)) if b else '-'
        rss, dev = med(r, 'rss'), med(r, 'device')
        above = rss - base_rss[r['np']] if r['np'] in base_rss else float('nan')
        b_above = med(b, 'rss') - base_rss.get(1, 0.0) if b else 0.0
        over = ' (oversubscribed)' if r['np'] > cores else ''
        times = lambda k: '%.3f (%.3f)' % (med(r, k), best(r, k))
        out.append('| %s | %d%s | %s | %s | %s | %s | %s | %s | %.2f%% | %.1f | %.1f | %s | %.1f | %s | %s |' % (
            name, r['np'], over, times('query'), ratio('query'), times('search'), ratio('search'),
            times('build'), ratio('build'), 100 * med(r, 'phase2'), rss, above,
            '%.2f' % (above / b_above) if b and b_above > 0 else '-', dev,
            '%.2f' % (dev / med(b, 'device')) if b and med(b, 'device') > 0 else '-',
            ' '.join('%.1f' % l for l in r['loads'])))
    out.append('')
    out.append('Times: median (fastest) over the rounds; speedups and efficiencies: of the '
               'medians (of the fastest runs, the least disturbed by other jobs). Memory: '
               'medians.')
    out.append('')
    out.append('Memory baseline (tiny run, PoCL and Open MPI loaded): ' + ', '.join(
        'P = %d: %.1f MiB' % (p, v) for p, v in sorted(base_rss.items())))
    last, weak = sp.get('spatial-lastcore-p1'), sp.get('spatial-weak-p2')
    pair = sp.get('spatial-pair-p1')
    if pair and weak:
        out.append('')
        out.append('Weak scaling against two P = 1 runs at once (the same work per core with '
                   'no communication: what the machine allows): efficiency %.2f (%.2f)' % (
                       med(pair, 'query') / med(weak, 'query'),
                       best(pair, 'query') / best(weak, 'query')))
    if last and weak:
        out.append('')
        out.append('Weak scaling against P = 1 on core %d (the P = 2 run waits for its rank '
                   'there): efficiency %.2f (%.2f)' % (
                       cores - 1, med(last, 'query') / med(weak, 'query'),
                       best(last, 'query') / best(weak, 'query')))
    return out

lines = []
lines.append('| run | P | ranks get | query max (s) | query speedup | build max (s) | merge max (s) | merge / total | total (s) | merge MiB | load before |')
lines.append('|---|---|---|---|---|---|---|---|---|---|---|')
for name, r in rows.items():
    if r['workload'].startswith('spatial-'):
        continue
    b = base.get((r['workload'], r['mode']))
    q = med(r, 'query')
    if r['workload'] == '3d-weak':
        speed = 'n/a (weak)'
        if b:
            speed = 'efficiency %.2f' % (med(b, 'query') / q)
    else:
        speed = '%.2fx' % (med(b, 'query') / q) if b else '-'
    over = ' (oversubscribed)' if r['np'] > cores and r['mode'] != 'shard' else ''
    lines.append('| %s | %d%s | %s | %.3f | %s | %.3f | %.4f | %.1f%% | %.3f | %.2f | %s |' % (
        name, r['np'], over, {'core': '1 thread each', 'node': 'cores / P', 'shard': '1 shard alone, 1 thread'}[r['mode']], q, speed,
        med(r, 'build'), med(r, 'merge'), 100 * med(r, 'merge') / med(r, 'total'), med(r, 'total'),
        med(r, 'bytes') / 2**20, ' '.join('%.1f' % l for l in r['loads'])))
if len(lines) == 2:
    lines = []
spatial = spatial_table()
if spatial:
    lines += ([''] if lines else []) + ['Spatial partition (mpi.partition: auto; 1 thread per rank):', ''] + spatial
table = '\n'.join(lines)
print(table)

stamp = datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')
with open(md_path, 'w') as f:
    f.write('<!-- generated by bench/scaling.sh on %s, %d cores, %s, medians of %s runs -->\n' % (
        stamp, cores, platform.node(), repeat))
    f.write(table + '\n')
PY
echo "table: $out/table.md (bench/results/scaling.md holds a recorded run with its analysis)" >&2
