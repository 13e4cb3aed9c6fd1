#!/bin/bash
# A run that no launcher started never starts MPI (docs/cluster.md, "Many ranks and
# SLURM"): with Open MPI pointed at a transport that does not exist, the
# plain run still succeeds and writes the bytes of `mpirun -n 1` (which
# starts MPI without that setting), its report's timings its own, and
# LBKNN_MPI=1 - MPI started anyway - fails on the same setting, so the
# first run passed because MPI never ran.
# usage: alone.sh LBKNN MPIEXEC
. "$(dirname "$0")/../expect.sh"
bin=$1 mpiexec=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-alone.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
job=(--set synthetic.points=3000 --set synthetic.queries=400 --set synthetic.dim=3
    --set device.batch=128)
outs() { echo "--set output.neighbors=$1.ivecs --set output.distances=$1.fvecs --set output.predictions=$1.csv"; }
broken=OMPI_MCA_pml=lbknn_no_such_pml
# shellcheck disable=SC2046 # outs: words on purpose
expect_exit 0 env "$broken" "$bin" run -q "${job[@]}" $(outs alone) --set output.report=alone.yaml
# One rank's timings are its own: min = avg = max, and the build and the
# query took some time.
for phase in build query; do
    line=$(awk '/^[^ ]/ { in_t = ($1 == "timings_s:") } in_t' alone.yaml | grep "^  $phase: {") ||
        fail "no $phase timing in the report"
    echo "${line#*{}" | sed 's/[^0-9.e+-]/ /g' |
        awk '{ if (NF != 3 || !($1 == $2 && $2 == $3 && $1 > 0)) exit 1 }' ||
        fail "one rank's $phase timing is not its own: $line"
done
# shellcheck disable=SC2046
expect_exit 0 "$mpiexec" -n 1 "$bin" run -q "${job[@]}" $(outs mpi)
for ext in ivecs fvecs csv; do
    cmp "alone.$ext" "mpi.$ext" || fail "alone.$ext differs from the mpirun -n 1 run"
done
# Open MPI ends the process from inside MPI_Init here: no leak check for
# what lbknn held then (the sanitized build).
# shellcheck disable=SC2046
env LBKNN_MPI=1 "$broken" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    "$bin" run -q "${job[@]}" $(outs forced) >out.txt 2>err.txt
rc=$?
[ $rc -ne 0 ] || fail "LBKNN_MPI=1 ran without starting MPI (exit 0 with a broken pml)"
[ ! -e forced.ivecs ] || fail "outputs left by the run that could not start MPI"
echo "alone: same bytes as mpirun -n 1; LBKNN_MPI=1 started MPI (exit $rc)"
