#!/bin/bash
# Resume overhead (issue 43): what `--resume` adds to a run, reading the
# checkpoint and checking every part it names against the partial files
# (the CRC of every finished row's bytes), as lbknn reports it ("checkpoint
# read and checked in X s"), against the search phase of an uninterrupted
# run of the same job on the resuming rank count. The stop: SIGUSR1 DELAY
# seconds after the first checkpoint (run.checkpoint_s: 1), on NP_STOP
# ranks; the resume on NP_RESUME. Prints the finished share at the stop,
# both times and their ratio; the resumed outputs are compared (cmp) with
# the uninterrupted run's.
# Usage: bench/resume.sh LBKNN MPIEXEC NP_STOP NP_RESUME [DELAY (4)] [--set ...]
bin=${1:?usage: bench/resume.sh LBKNN MPIEXEC NP_STOP NP_RESUME [DELAY] [--set ...]}
mpiexec=$2 np_stop=$3 np_resume=$4 delay=${5:-4}
shift 5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
job=(--set synthetic.points=10000000 --set synthetic.queries=1000000 --set synthetic.dim=3
     --set knn.engine=kdtree --set device.batch=50000 --set output.predictions=p.csv
     --set output.neighbors=n.npy --set output.distances=d.npy --set output.report=r.yaml "$@")
launch() {
    local np=$1
    shift
    if [ "$np" -eq 1 ]; then "$bin" run /dev/null "$@"; else
        "$mpiexec" -np "$np" "$bin" run /dev/null "$@"; fi
}
launch "$np_resume" -q "${job[@]}" || exit 1
mkdir one && mv p.csv n.npy d.npy r.yaml one/
search=$(awk '$1 == "search:" {print $2}' one/r.yaml)
# Not through launch(): the signal goes to lbknn or mpirun, not a subshell.
stop=(run /dev/null -q "${job[@]}" --set run.checkpoint=ck --set run.checkpoint_s=1)
if [ "$np_stop" -eq 1 ]; then "$bin" "${stop[@]}" & else
    HWLOC_COMPONENTS=-opencl "$mpiexec" -np "$np_stop" "$bin" "${stop[@]}" & fi
pid=$!
for _ in $(seq 1200); do [ -e ck ] && break; sleep 0.1; done
sleep "$delay"
kill -USR1 "$pid"
wait "$pid"
rc=$?
[ $rc -eq 3 ] || { echo "the stopped run exited $rc, not 3"; exit 1; }
done_rows=$(awk '$1 == "done" {print $2}' ck)
launch "$np_resume" --resume "${job[@]}" --set run.checkpoint=ck 2>err.txt >/dev/null || { cat err.txt; exit 1; }
resume=$(grep -o 'read and checked in [0-9.]* s' err.txt | awk '{print $5}')
for f in p.csv n.npy d.npy; do cmp "$f" "one/$f" || { echo "$f differs"; exit 1; }; done
/usr/bin/python3 -c "
s, r, d = $search, $resume, $done_rows
print(f'stopped on $np_stop ranks with {d} of 1000000 queries done; resumed on $np_resume')
print(f'uninterrupted search {s:.3f} s; resume (read, check) {r:.3f} s = {100 * r / s:.2f} % of it')"
