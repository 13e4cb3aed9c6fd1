#!/bin/bash
# The cost of memory a process touches for the first time, on this machine:
# bench/first_touch (one fresh mapping, one store per 4 KiB page) alone on
# core 0, alone on core 1, and two at once (one on each core), round by
# round, the order rotating; huge-page mappings (as lbk_alloc_large's) and,
# once a round, plain 4 KiB pages alone. The lone run on core 0 maps twice:
# its second mapping gets the pages the first gave back a moment before,
# the cost without whatever the host adds for pages the guest let go.
# A rank's query phase writes tens of MiB of fresh arrays (K-lists,
# results), so where this cost is large and varies from one draw to the
# next, the slower of two ranks, or of two independent processes, pays the
# worse draw: part of why wall_scaling's machine ceiling for 1 -> 2 ranks
# falls short of 2.
#
#   bench/first_touch.sh [BUILD_DIR (build)] [--mb N (40)] [--rounds N (9)]
#                        [--gap S (1)]
#
# --gap: seconds between runs (the guest's freed pages may go back to the
# host meanwhile, as they do between an lbknn run's phases). The table (ms
# per MiB, medians over the rounds and their range) goes to stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=$root/build mb=40 rounds=9 gap=1
while [ $# -gt 0 ]; do
    case $1 in
    --mb) mb=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --gap) gap=$2; shift ;;
    -*) echo "usage: $0 [BUILD_DIR] [--mb N] [--rounds N] [--gap S]" >&2; exit 2 ;;
    *) B=$(cd "$1" && pwd) ;;
    esac
    shift
done
tool=$B/bench/first_touch
[ -x "$tool" ] || { echo "$tool missing: cmake --build $B --target first_touch" >&2; exit 1; }
ms() { awk '{print $5}'; }
log=$(mktemp)
trap 'rm -f "$log" "$log.a" "$log.b"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
    "load $(cut -d' ' -f1-3 /proc/loadavg); $mb MiB a run, $rounds rounds, ${gap} s apart"
arms=(core0 core1 pair)
for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < 3; i++)); do
        arm=${arms[$(((i + r) % 3))]}
        case $arm in
        core0)
            taskset -c 0 "$tool" "$mb" huge 2 | ms >"$log.a"
            echo "core0 $(sed -n 1p "$log.a")" >>"$log"
            echo "again $(sed -n 2p "$log.a")" >>"$log"
            ;;
        core1) echo "core1 $(taskset -c 1 "$tool" "$mb" huge | ms)" >>"$log" ;;
        pair)
            taskset -c 0 "$tool" "$mb" huge >"$log.a" &
            taskset -c 1 "$tool" "$mb" huge >"$log.b"
            wait
            echo "pair $(ms <"$log.a") $(ms <"$log.b")" >>"$log"
            ;;
        esac
        sleep "$gap"
    done
    echo "plain $(taskset -c 0 "$tool" "$mb" plain | ms)" >>"$log"
    sleep "$gap"
done
/usr/bin/python3 - "$log" <<'PY'
import statistics, sys
runs = {"core0": [], "core1": [], "again": [], "plain": [], "pair_max": [], "pair_min": []}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "pair":
        a, b = float(f[1]), float(f[2])
        runs["pair_max"].append(max(a, b))
        runs["pair_min"].append(min(a, b))
    else:
        runs[f[0]].append(float(f[1]))
print()
print("| run | ms per MiB, median | range |")
print("|---|---|---|")
names = {"core0": "huge pages, alone on core 0", "core1": "huge pages, alone on core 1",
         "again": "huge pages, core 0, the same process's second mapping",
         "pair_min": "huge pages, two at once: the faster", "pair_max": "huge pages, two at once: the slower",
         "plain": "4 KiB pages, alone on core 0"}
for key, name in names.items():
    v = runs[key]
    print("| %s | %.3f | %.3f-%.3f |" % (name, statistics.median(v), min(v), max(v)))
PY
