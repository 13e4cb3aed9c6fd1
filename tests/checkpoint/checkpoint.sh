#!/bin/bash
# Checkpoints and --resume (docs/user-guide.md, "Checkpoints and resume"): a run stopped
# by run.max_hours, SIGUSR1, SIGTERM or kill -9 and resumed (as often as it
# takes) ends with outputs byte-identical (cmp) to a one-shot run; every
# mismatch is refused with its own line and touches no file (sha256 of the
# directory before and after). Usage: checkpoint.sh LBKNN MPIEXEC CASE NP [--set ...]
# CASE: max_hours | owned | cross TO TASK | compact TO TYPE | usr1_cross TO TASK | regress | report | usr1 | usr1_mpirun | usr1_early | term | kill9 | refuse | refuse_held | prev | unsupported
. "$(dirname "$0")/../expect.sh"
bin=$1 mpiexec=$2 case=$3 np=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
outs="pred.csv proba.csv nb.npy d.fvecs"
cat > job.yaml <<'YAML'
synthetic: {points: 2000, queries: 300, dim: 3}
device: {batch: 64}
mpi: {partition: shard}
output: {predictions: pred.csv, probabilities: proba.csv, neighbors: nb.npy, distances: d.fvecs}
YAML
# Stops (exit 3) and refusals (exit 2) end every rank by itself: Open MPI's
# mpirun then still ends the job's processes as after a failure, SIGCONT,
# odls_base_sigkill_timeout seconds (default 1), SIGTERM, the same again,
# SIGKILL, even when all have already exited: 1-2 s of each such launch,
# where the run took 0.15 s (checkpoint.prev.p2: 17 s -> 6 s). The ranks
# leave MPI_Finalize together; a rank still exiting then that gets SIGTERM
# keeps the checkpoint and its partial files (docs/user-guide.md, "Stopping
# on purpose"). The cases that signal a run (usr1, term, kill9) keep Open
# MPI's default: what a user's mpirun does to its ranks is what they test;
# so does the sanitized pass (ASAN_OPTIONS set), whose ranks run their leak
# check as they exit, after MPI_Finalize.
case $case in
usr1* | term | kill9) ;;
*) [ -n "${ASAN_OPTIONS:-}" ] || export OMPI_MCA_odls_base_sigkill_timeout=0 ;;
esac
# q= (an assignment before the command) for one run that logs its warnings.
q=-q
run() {
    # shellcheck disable=SC2086 # $q: -q or nothing
    if [ "$np" -eq 1 ]; then "$bin" run job.yaml $q "$@"; else
        "$mpiexec" -np "$np" "$bin" run job.yaml $q "$@"; fi
}
ck=(--set run.checkpoint=ck)
one_shot() {
    expect_exit 0 run "$@"
    mkdir -p one && for f in $outs; do mv "$f" one/ || fail "no $f"; done
}
same() {
    for f in $outs; do cmp "$f" "one/$f" || fail "$f differs from the one-shot run"; done
    [ ! -e ck ] && [ ! -e ck.prev ] || fail "checkpoint left after the finished run"
    ls ./*.lbknn-partial* 2>/dev/null && fail "partial files left"
    return 0
}
# Resume until the run finishes (at most 40 times); each stop is exit 3.
resume_all() {
    for _ in $(seq 40); do
        run --resume "${ck[@]}" "$@" >out.txt 2>err.txt
        rc=$?
        [ $rc -eq 0 ] && return 0
        [ $rc -eq 3 ] || { cat err.txt >&2; fail "resume exit $rc"; }
    done
    fail "never finished"
}
# Start a long run in the background, wait for its first checkpoint, then
# send the signal; the pids of the lbknn processes themselves for kill -9.
long=(--set synthetic.queries=1600000 --set device.batch=100 --set run.checkpoint_s=1)
signal_case() {
    local sig=$1 want=$2
    shift 2
    one_shot "${long[@]}" "$@"
    # Not through run(): the signal goes to lbknn or mpirun, not a subshell.
    if [ "$np" -eq 1 ]; then
        "$bin" run job.yaml -q "${ck[@]}" "${long[@]}" "$@" >out.txt 2>err.txt &
    else
        "$mpiexec" -np "$np" "$bin" run job.yaml -q "${ck[@]}" "${long[@]}" "$@" >out.txt 2>err.txt &
    fi
    local pid=$!
    for _ in $(seq 600); do [ -e ck ] && break; sleep 0.05; done
    [ -e ck ] || fail "no checkpoint appeared"
    sleep 0.$((RANDOM % 9)) # a random point between two checkpoints
    if [ "$sig" = KILL ] && [ "$np" -gt 1 ]; then
        pkill -KILL -P "$pid"
    else
        kill -"$sig" "$pid"
    fi
    wait "$pid"
    local rc=$?
    [ -n "$want" ] && { [ $rc -eq "$want" ] || { cat out.txt err.txt >&2; fail "exit $rc, expected $want"; }; }
    [ $rc -ne 0 ] || fail "the run ended before the signal: make it longer"
    [ -e ck ] || fail "SIG$sig removed the checkpoint"
    resume_all "${long[@]}" "$@"
    same
}
# True once process $1 has a handler for SIGUSR1 (bit 10 of SigCgt).
wait_usr1_caught() {
    local mask
    for _ in $(seq 2000); do
        mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
        [ -n "$mask" ] || return 1
        (((16#$mask >> 9) & 1)) && return 0
        sleep 0.005
    done
    return 1
}
# SIGUSR1 while the run is still starting (MPI, the job, the inputs, the
# device): with run.checkpoint it is a stop request like any later one
# (exit 3, then resumed to the one-shot bytes); without, it ends the run as
# SIGUSR1's default does and leaves no outputs. The delays are printed.
early_usr1() {
    local with=$1 delay rc
    shift
    "$bin" run job.yaml -q "$@" >out.txt 2>err.txt &
    local pid=$!
    # Counted from lbknn's first step (its handler in /proc's SigCgt): a
    # signal while the loader still maps libraries finds no program to
    # catch it (CI's sanitized build took over 23 ms to get there).
    wait_usr1_caught "$pid" || fail "lbknn never caught SIGUSR1"
    delay=$((RANDOM % 280))
    echo "SIGUSR1 ${delay} ms after lbknn caught it (${with})"
    sleep "$(printf '0.%03d' "$delay")"
    kill -USR1 "$pid"
    wait "$pid"
    rc=$?
    if [ "$with" = checkpoint ]; then
        [ $rc -eq 3 ] || { cat err.txt >&2; fail "SIGUSR1 ${delay} ms after the handler: exit $rc, expected 3"; }
    else
        [ $rc -eq $((128 + 10)) ] || { cat err.txt >&2; fail "SIGUSR1 ${delay} ms after the handler without run.checkpoint: exit $rc, expected 138"; }
        for f in $outs; do [ ! -e "$f" ] || fail "$f left by a run SIGUSR1 ended"; done
        ls ./*.lbknn-partial* 2>/dev/null && fail "partial files left"
    fi
    return 0
}
hashes() { sha256sum ck* ./*.lbknn-partial* job.yaml ref.csv 2>/dev/null; }
# Each mismatch: refused (exit 2) with its line, nothing touched.
refused() {
    local msg=$1
    shift
    hashes > before.txt
    expect_exit 2 "$@"
    expect_err "$msg"
    hashes > after.txt
    cmp -s before.txt after.txt || fail "a refused resume touched files"
}
# File inputs instead of synthetic data: reference rows with a label (or
# target) in column 3, for inputs that can change and for task regress.
file_inputs() {
    /usr/bin/python3 -c '
import numpy as np; r = np.random.default_rng(7); print("seed 7")
x = r.random((500, 3)); y = r.integers(0, 4, 500)
with open("ref.csv", "w") as f:
    for row, label in zip(x, y): f.write("%.6f,%.6f,%.6f,%d\n" % (*row, label))
np.savetxt("qry.csv", r.random((300, 3)), delimiter=",", fmt="%.6f")'
    printf 'reference: {path: ref.csv, %s: 3}\nquery: {path: qry.csv}\n' "$1" >> job.yaml
    sed -i '/^synthetic/d' job.yaml
}
# The neighbours are the K nearest of a numpy brute force (distances
# compared, so that ties may come in either order), seeded file inputs.
oracle() {
    /usr/bin/python3 - <<'PY' || fail "neighbours differ from the numpy oracle"
import numpy as np, sys
ref = np.loadtxt("ref.csv", delimiter=",")[:, :3]
q = np.loadtxt("qry.csv", delimiter=",")
nb = np.load("nb.npy")
k = nb.shape[1]
d = ((q[:, None, :] - ref[None, :, :]) ** 2).sum(-1)
got = np.sort(np.take_along_axis(d, nb.astype(np.int64), 1), 1)
want = np.sort(d, 1)[:, :k]
bad = ~np.isclose(got, want, rtol=1e-4, atol=1e-6).all(1)
print("oracle: %d of %d queries differ" % (bad.sum(), len(q)))
sys.exit(1 if bad.any() else 0)
PY
}
# Stopped after every batch (run.max_hours) and resumed until done.
stop_each_batch() {
    expect_exit 3 run "${ck[@]}" --set run.max_hours=0.0000001 "$@"
    [ -e ck ] || fail "no checkpoint after the stop"
    resume_all --set run.max_hours=0.0000001 "$@"
}
case $case in
# Stopped on NP ranks after the first batch, resumed on TO ranks with
# another batch size and stopped again, then finished on TO ranks: the
# bytes of a one-shot run (on NP ranks: a run's bytes do not depend on the
# rank count or the batch size), for task
# TASK (classify, regress, graph, or hdf5: classify into HDF5 arrays),
# whatever partition and engine the --sets ask.
cross)
    to=$1 task=$2
    shift 2
    if [ "$task" = hdf5 ]; then # classify into HDF5 arrays
        sed -i 's/nb.npy/nb.h5/; s/d.fvecs/d.h5/' job.yaml
        outs="pred.csv proba.csv nb.h5 d.h5"
    fi
    if [ "$task" = regress ]; then
        file_inputs target_column
        sed -i 's/^output:/task: regress\noutput:/; s/probabilities: proba.csv, //' job.yaml
        outs="pred.csv nb.npy d.fvecs"
    else
        file_inputs label_column
    fi
    if [ "$task" = graph ]; then # the reference set's graph: CSR, neighbours, distances
        sed -i '/^query:/d; s/^output:.*/task: graph\noutput: {graph: g.npz, neighbors: nb.npy, distances: d.fvecs}/' job.yaml
        outs="g.npz nb.npy d.fvecs"
    fi
    echo "stop on $np ranks, resume on $to"
    one_shot "$@"
    stop=(--set run.max_hours=0.0000001)
    expect_exit 3 run "${ck[@]}" "${stop[@]}" "$@"
    # Another batch size too: not in the job's hash (no byte depends on it).
    np=$to expect_exit 3 run --resume "${ck[@]}" "${stop[@]}" "$@" --set device.batch=7
    np=$to expect_exit 0 run --resume "${ck[@]}" "$@"
    same ;;
# Compact reference points (TYPE uint8, int8 or float16, .npy, brute
# force): stopped on NP ranks, resumed on TO with another batch size to
# the end: the one-shot run's bytes. The checkpoint
# records the points' type; a resume that searches them at another (where
# knn.engine, not in the job hash, widens them) is refused naming both: a
# checkpoint whose line names another type (its CRC made right) stands
# for it.
compact)
    to=$1 type=$2
    shift 2
    /usr/bin/python3 - "$type" <<'PY' || fail "writing the data failed"
import sys, numpy as np
t = sys.argv[1]; r = np.random.default_rng(11); print("seed 11")
def points(n):
    if t == "float16":
        return r.standard_normal((n, 24)).astype(np.float16)
    lo, hi = (0, 256) if t == "uint8" else (-128, 128)
    return r.integers(lo, hi, (n, 24)).astype(t)
ref = points(900); ref[9::13] = ref[4]
np.save("ref.npy", ref); np.save("qry.npy", points(300))
PY
    printf 'task: search\nreference: {path: ref.npy, type: %s}\nquery: {path: qry.npy}\nknn: {engine: brute}\n' \
        "$type" >>job.yaml
    sed -i '/^synthetic/d; s/^output:.*/output: {neighbors: nb.npy, distances: d.fvecs}/' job.yaml
    outs="nb.npy d.fvecs"
    echo "$type: stop on $np ranks, resume on $to"
    q= one_shot "$@"
    grep -q widened err.txt && fail "the one-shot run widened the points: $(cat err.txt)"
    stop=(--set run.max_hours=0.0000001)
    expect_exit 3 run "${ck[@]}" "${stop[@]}" "$@"
    grep -qx "points $type" ck || fail "the checkpoint does not say its points are $type"
    other=float16
    [ "$type" = float16 ] && other=uint8
    cp ck ck.good
    /usr/bin/python3 -c '
import sys, zlib; t = open("ck.good", "rb").read().split(b"\n")[:-2]
t = [b"points " + sys.argv[1].encode() if l.startswith(b"points ") else l for l in t]
body = b"\n".join(t) + b"\n"; open("ck", "wb").write(body + b"end %08x\n" % zlib.crc32(body))' "$other"
    np=$to refused "the checkpointed run searched $other reference points, this one searches them as $type" \
        run --resume "${ck[@]}" "$@"
    mv ck.good ck
    # reference.type is in the job hash.
    np=$to refused "the checkpoint has \"job_hash" run --resume "${ck[@]}" "$@" \
        --set reference.type=float32
    np=$to expect_exit 0 run --resume "${ck[@]}" "$@" --set device.batch=7
    same ;;
owned)
    file_inputs label_column
    one_shot "$@"
    (cd one && cp ../ref.csv ../qry.csv . && oracle) || exit 1
    stop_each_batch "$@"
    same
    oracle ;;
refuse_held)
    # A rank's own parts: its held files and its rows of a shared array.
    file_inputs label_column
    expect_exit 3 run "${ck[@]}" --set run.max_hours=0.0000001 "$@"
    # Rank 1's rows start at query 150 of 300: its held files are named so.
    held=pred.csv.lbknn-partial.row-150
    [ -s "$held" ] && [ -s proba.csv.lbknn-partial.row-150 ] || fail "no held files of rank 1"
    cp "$held" h.bak
    truncate -s 3 "$held"
    refused "the held.predictions partial file $held of the rows from 150 has 3 bytes, fewer than" \
        run --resume "${ck[@]}" "$@"
    cp h.bak "$held" && printf 'X' | dd of="$held" bs=1 seek=2 conv=notrunc 2>/dev/null
    refused "the held.predictions partial file $held of the rows from 150 differs from the checkpointed" \
        run --resume "${ck[@]}" "$@"
    rm "$held"
    refused "the held.predictions partial file $held of the rows from 150 is missing" \
        run --resume "${ck[@]}" "$@"
    cp h.bak "$held" && rm h.bak
    cp nb.npy.lbknn-partial nb.bak
    # The file's last byte: rank 1's rows lie after rank 0's.
    size=$(stat -c %s nb.npy.lbknn-partial)
    printf 'X' | dd of=nb.npy.lbknn-partial bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null
    refused "the output.neighbors partial file nb.npy.lbknn-partial differs in the rows from 150" \
        run --resume "${ck[@]}" "$@"
    cp nb.bak nb.npy.lbknn-partial && rm nb.bak
    mv ck ck.away
    refused "exists but no checkpoint does" run --resume "${ck[@]}" "$@"
    mv ck.away ck
    # Written past the checkpoint (kill -9 mid-batch): cut back.
    printf 'garbage' >> "$held"
    resume_all --set run.max_hours=0.0000001 "$@"
    expect_exit 0 run --set output.predictions=full.csv --set output.probabilities=fullp.csv \
        --set output.neighbors=fullnb.npy --set output.distances=fulld.fvecs "$@"
    cmp pred.csv full.csv && cmp proba.csv fullp.csv && cmp nb.npy fullnb.npy &&
        cmp d.fvecs fulld.fvecs || fail "resumed outputs differ"
    ls ./*.lbknn-partial* 2>/dev/null && fail "partial files left"
    oracle ;;
regress)
    file_inputs target_column
    sed -i 's/^output:/task: regress\noutput:/; s/probabilities: proba.csv, //' job.yaml
    outs="pred.csv nb.npy d.fvecs"
    one_shot "$@"
    expect_exit 3 run "${ck[@]}" --set run.max_hours=0.0000001 "$@"
    resume_all --set run.max_hours=0.0000001 "$@"
    same ;;
max_hours)
    one_shot "$@"
    stop_each_batch "$@"
    same ;;
# The report times the checkpoint hook inside the search phase and counts
# the checkpoints (bench/RESULTS.md's overhead figures come from it); a run
# without checkpoints has no such line.
report)
    # The run without run.checkpoint has no line to show whatever its
    # length: a short one (the long one took half the test's 9 s).
    expect_exit 0 run "${long[@]}" --set synthetic.queries=20000 --set output.report=plain.yaml "$@"
    grep -q '^  checkpoint:' plain.yaml && fail "a checkpoint line without run.checkpoint"
    expect_exit 0 run "${ck[@]}" "${long[@]}" --set output.report=r.yaml "$@"
    grep -Eq '^  checkpoint: [0-9]+\.[0-9]{6}  # .* [1-9][0-9]* checkpoints written$' r.yaml ||
        fail "no checkpoint time and count in the report: $(grep -A12 '^timings_s' r.yaml)"
    ;;
usr1) signal_case USR1 3 "$@" ;;
# Stopped by SIGUSR1 to one rank (the last: any rank's stop stops all)
# mid-run on NP ranks, then resumed on TO ranks: the one-shot run's bytes.
# TASK: classify (the job's queries) or graph (the reference set's own).
# The signal comes once the rank catches SIGUSR1 and a batch is in the
# partial files, not after run.checkpoint_s: the stop writes its own
# checkpoint, and a run of a few batches' worth more is long enough.
usr1_cross)
    to=$1 task=$2
    shift 2
    if [ "$task" = graph ]; then
        sed -i 's/^output:.*/task: graph\noutput: {graph: g.npz, neighbors: nb.npy, distances: d.fvecs}/' job.yaml
        outs="g.npz nb.npy d.fvecs"
        part=nb.npy.lbknn-partial
        mid=(--set synthetic.points=60000 --set knn.engine=kdtree --set device.batch=100)
    else
        part=pred.csv.lbknn-partial
        mid=(--set synthetic.queries=150000 --set device.batch=100)
    fi
    echo "SIGUSR1 on $np ranks, resume on $to"
    one_shot "${mid[@]}" "$@"
    if [ "$np" -eq 1 ]; then
        "$bin" run job.yaml -q "${ck[@]}" "${mid[@]}" "$@" >out.txt 2>err.txt &
    else
        "$mpiexec" -np "$np" "$bin" run job.yaml -q "${ck[@]}" "${mid[@]}" "$@" >out.txt 2>err.txt &
    fi
    pid=$! rank=$pid
    # The last rank's pid: mpirun's child whose environment names it.
    for _ in $(seq 600); do
        [ "$np" -eq 1 ] && break
        for c in $(pgrep -P "$pid"); do
            grep -qzx "OMPI_COMM_WORLD_RANK=$((np - 1))" "/proc/$c/environ" 2>/dev/null && rank=$c
        done
        [ "$rank" != "$pid" ] && break
        sleep 0.05
    done
    [ "$rank" != "$pid" ] || [ "$np" -eq 1 ] || fail "no rank $((np - 1)) among mpirun's children"
    wait_usr1_caught "$rank" || fail "rank $((np - 1)) never caught SIGUSR1"
    for _ in $(seq 600); do [ -s "$part" ] && break; sleep 0.02; done
    [ -s "$part" ] || fail "no batch in $part"
    delay=$((RANDOM % 100))
    echo "SIGUSR1 to rank $((np - 1)) ${delay} ms after its first batch"
    sleep "$(printf '0.%03d' "$delay")"
    kill -USR1 "$rank"
    wait "$pid"
    rc=$?
    [ $rc -eq 3 ] || { cat out.txt err.txt >&2; fail "exit $rc, expected 3"; }
    [ -e ck ] || fail "no checkpoint after the stop"
    np=$to expect_exit 0 run --resume "${ck[@]}" "${mid[@]}" "$@"
    same ;;
# What a user does: `kill -USR1` to mpirun's pid, with the setting the
# user guide gives (HWLOC_COMPONENTS=-opencl) and without what the test gate
# leaves behind: PoCL, opened by the gate, sets HWLOC_PLUGINS_PATH=/dev/null,
# which hides the same fault from mpirun. The fault: Open MPI 4.1's mpirun
# (hwloc's OpenCL plugin) starts PoCL, whose LLVM takes SIGUSR1 for its "info
# signal" handler, and the signal is swallowed there instead of forwarded.
usr1_mpirun)
    [ "$np" -gt 1 ] || fail "usr1_mpirun needs NP > 1"
    unset HWLOC_PLUGINS_PATH
    export HWLOC_COMPONENTS=-opencl
    signal_case USR1 3 "$@"
    ;;
usr1_early)
    # Half of `long`: the signal comes within 280 ms of lbknn's first
    # step, and the run still has seconds to go (0.7 s where a machine is
    # three times this one), so each of the five runs costs half as much.
    early=(--set synthetic.queries=800000 --set device.batch=100 --set run.checkpoint_s=1)
    one_shot "${early[@]}" "$@"
    for _ in 1 2 3; do
        early_usr1 checkpoint "${ck[@]}" "${early[@]}" "$@"
        resume_all "${early[@]}" "$@"
        same
    done
    rm -f $outs
    early_usr1 none "${early[@]}" "$@"
    ;;
term) signal_case TERM "" "$@" ;;
kill9) signal_case KILL "" "$@" ;;
refuse)
    file_inputs label_column
    expect_exit 3 run "${ck[@]}" --set run.max_hours=0.0000001
    refused "the checkpoint has \"job_hash" run --resume "${ck[@]}" --set knn.k=6
    cp ck ck.good
    # A checkpoint of the format before (whole, its CRC right): refused as such.
    /usr/bin/python3 -c '
import zlib; t = open("ck.good", "rb").read().split(b"\n")[:-2]
t[0] = b"lbknn checkpoint 2"; body = b"\n".join(t) + b"\n"
open("ck", "wb").write(body + b"end %08x\n" % zlib.crc32(body))'
    refused "the checkpoint is of format 2, written by an older lbknn; this one reads format 3" \
        run --resume "${ck[@]}"
    cp ck.good ck
    printf 'x' >> ck
    refused "the checkpoint is corrupted" run --resume "${ck[@]}"
    cp ck.good ck && rm ck.good
    cp pred.csv.lbknn-partial p.bak
    truncate -s 20 pred.csv.lbknn-partial
    refused "fewer than the checkpointed" run --resume "${ck[@]}"
    cp p.bak pred.csv.lbknn-partial && printf 'X' | dd of=pred.csv.lbknn-partial bs=1 seek=15 conv=notrunc 2>/dev/null
    refused "differs from the checkpointed one" run --resume "${ck[@]}"
    cp p.bak pred.csv.lbknn-partial && rm p.bak
    touch -r ref.csv stamp
    touch -d '2001-01-01' ref.csv
    refused "input reference.path differs" run --resume "${ck[@]}"
    touch -r stamp ref.csv
    mv ck ck.away
    refused "exists but no checkpoint does" run --resume "${ck[@]}"
    mv ck.away ck
    # A partial written past the checkpoint (kill -9 mid-batch) is cut back.
    printf 'garbage\n' >> pred.csv.lbknn-partial
    resume_all
    expect_exit 0 run --set run.checkpoint= --set output.predictions=full.csv \
        --set output.probabilities= --set output.neighbors= --set output.distances=
    cmp pred.csv full.csv || fail "resumed predictions differ"
    # --resume with neither a checkpoint nor a partial file: a fresh start.
    rm -f ck pred.csv
    q= expect_exit 0 run --resume "${ck[@]}"
    expect_err "no checkpoint and no partial files: starting from the first batch"
    cmp pred.csv full.csv || fail "a fresh --resume's predictions differ" ;;
prev)
    # Two stops: ck (after batch 2) and ck.prev (after batch 1).
    one_shot "$@"
    stop=(--set run.max_hours=0.0000001)
    expect_exit 3 run "${ck[@]}" "${stop[@]}" "$@"
    expect_exit 3 run --resume "${ck[@]}" "${stop[@]}" "$@"
    [ -e ck ] && [ -e ck.prev ] || fail "two stops left no ck and ck.prev"
    cmp -s ck ck.prev && fail "ck.prev is not the earlier checkpoint"
    # A whole checkpoint that does not match is refused, never bypassed.
    refused "the checkpoint has \"job_hash" run --resume "${ck[@]}" --set knn.k=6 "$@"
    cp ck ck.good && cp ck.prev prev.good
    # Both damaged: refused with its own line.
    printf 'x' >> ck && truncate -s 40 ck.prev
    refused "and the previous one, ck.prev, is corrupted" run --resume "${ck[@]}" "$@"
    # PATH cut short (a lost tail) with a whole PATH.prev: resumed from it
    # (the partial files cut back to its lengths), and the next checkpoint
    # keeps ck.prev, not the damaged ck, as the previous one.
    cp prev.good ck.prev && truncate -s 100 ck
    q='' expect_exit 3 run --resume "${ck[@]}" "${stop[@]}" "$@"
    expect_err "resuming from the previous one, ck.prev"
    cmp -s ck.prev prev.good || fail "the checkpoint after the fallback dropped ck.prev"
    cmp -s ck ck.good || fail "the fallback did not resume at ck.prev's batch"
    rm ck.good prev.good
    resume_all "${stop[@]}" "$@"
    same ;;
unsupported)
    # Classify by radius writes its outputs at the end and takes none.
    refused "run.checkpoint: task classify with knn.radius writes its outputs at the end and takes no checkpoints" \
        run "${ck[@]}" --set knn.radius=0.1 --set output.probabilities= \
        --set output.neighbors= --set output.distances=
    [ ! -e ck ] || fail "a refused run wrote a checkpoint" ;;
*) fail "unknown case $case" ;;
esac
echo ok
