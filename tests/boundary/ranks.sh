#!/bin/bash
# Randomized multi-rank boundary cases: each case's data set and job come
# from boundary_ranks_data (drawn from set, seed and case number alone); the
# job runs on its 1 to 4 ranks (one rank without mpirun), and every
# neighbour, distance and prediction is checked against the independent host
# oracle (tests/e2e/verify_outputs). A failing case prints its shape and the
# one command that replays it; the others still run.
#
# usage: ranks.sh LBKNN MPIEXEC DATA VERIFY SET [--seed S] [--cases N] [--case I]
set -u
lbknn=$(realpath "$1") mpiexec=$(command -v "$2") data=$(realpath "$3") verify=$(realpath "$4")
set=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
case $set in
default) seed=20240613 first=0 count=12 ;;
slow) seed=979 first=0 count=150 ;;
*) echo "ranks.sh: unknown set '$set' (default, slow)"; exit 2 ;;
esac
while [ $# -gt 0 ]; do
    case $1 in
    --seed) seed=$2 ;;
    --cases) count=$2 ;;
    --case) first=$2 count=1 ;;
    *) echo "ranks.sh: unknown option '$1'"; exit 2 ;;
    esac
    shift 2 || { echo "ranks.sh: $1 needs a value"; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lbk-boundary-ranks.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# The environment the replay needs besides the command: guard pages, and
# Open MPI's consent to run as root where the test gave it.
replay_env=""
for v in LBKNN_GUARD_PAGES OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
    OMPI_MCA_rmaps_base_oversubscribe; do
    [ -n "${!v:-}" ] && replay_env+="$v=${!v} "
done

failed=0
for ((i = first; i < first + count; i++)); do
    dir=$work/case-$i
    if ! "$data" "$dir" "$set" "$seed" "$i" >"$work/shape"; then
        echo "FAILED ranks $set case $i: boundary_ranks_data failed"; failed=$((failed + 1))
        continue
    fi
    read -r np k metric weights engine partition <"$work/shape"
    shape=$(sed -n 2p "$work/shape")
    out=$dir/out
    mkdir "$out"
    run=(run --quiet "$dir/job.yaml" --set output.predictions="$out/p.csv"
         --set output.neighbors="$out/n.ivecs" --set output.distances="$out/d.fvecs"
         --set output.report="$out/report.yaml")
    if [ "$np" -eq 1 ]; then
        "$lbknn" "${run[@]}" >"$out/log" 2>&1
    else
        "$mpiexec" -n "$np" "$lbknn" "${run[@]}" >"$out/log" 2>&1
    fi
    rc=$?
    why=""
    if [ "$rc" -ne 0 ]; then
        why="the run exited $rc"
    elif ! grep -q "^partition: {name: $partition," "$out/report.yaml" ||
        ! grep -q "^engine: {name: $engine," "$out/report.yaml"; then
        why="the report does not say engine $engine, partition $partition"
    elif ! "$verify" outputs "$dir" "$k" "$metric" "$weights" "$out/p.csv" "$out/n.ivecs" \
        "$out/d.fvecs" >"$out/verify" 2>&1; then
        why="the outputs differ from the oracle"
    fi
    if [ -n "$why" ]; then
        failed=$((failed + 1))
        echo "FAILED $shape: $why"
        tail -n 20 "$out/log" | sed 's/^/    run: /'
        [ -s "$out/verify" ] && tail -n 12 "$out/verify" | sed 's/^/    verify: /'
        [ -s "$out/report.yaml" ] &&
            grep '^  - {rank: ' "$out/report.yaml" | sed 's/^/    report: /'
        echo "    replay: ${replay_env}bash $here/ranks.sh $lbknn $mpiexec $data $verify $set" \
            "--seed $seed --case $i"
    fi
done
echo "$failed of $count cases failed (ranks $set, seed $seed)"
[ "$failed" -eq 0 ]
