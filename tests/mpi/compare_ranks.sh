#!/bin/bash
# Exactness across rank counts, and against the independent host oracle:
# the output files of `mpirun -n NP lbknn run` must be byte-identical to
# those of a plain one-rank run of the same job, and every neighbour,
# distance, prediction and probability of the NP-rank run, and its report's
# accuracy, top-5 accuracy and confusion matrix, must be what
# tests/e2e/verify_outputs recomputes from the data set (oracle_knn and a
# vote of its own).
#
# usage: compare_ranks.sh [--reference DIR | --against DIR] LBKNN MPIEXEC VERIFY NP
#                         [--arrays npy|bin] [JOB.yaml] [lbknn run arguments...]
# --arrays: neighbours and distances as .npy, or as .ibin/.fbin, instead of
# .ivecs/.fvecs (every rank writes its slices of those too).
# Without JOB.yaml the job is the synthetic data set of the --set
# synthetic.* arguments: `lbknn generate` writes those points to files (the
# same generator), the one-rank run makes them in memory and the NP-rank
# run reads the files, each rank its own rows; the oracle reads the files.
# With JOB.yaml (a data set in generate's layout, e.g. tests/spatial's
# spatial_data) both runs read it.
# The one-rank run never gets mpi.merge (one rank merges nothing), so one
# reference serves both merges. --reference DIR makes only the data set and
# the one-rank run, into DIR (a CTest fixture: tests/mpi's
# lbk_mpi_compare); --against DIR takes them from there instead of making
# them, where DIR was made for the same arguments (else it fails), and
# makes them itself, as without it, where DIR is not there (the GPU bundle
# runs tests without CTest's fixtures).
set -u
mode=compare ref=
case ${1:-} in
--reference | --against)
    mode=${1#--} ref=$2
    shift 2
    ;;
esac
lbknn=$1 mpiexec=$2 verify=$3 np=$4
shift 4
arrays=
nn=neighbors.ivecs dd=distances.fvecs
if [ "${1:-}" = --arrays ]; then
    arrays=$2
    case $2 in
    npy) nn=neighbors.npy dd=distances.npy ;;
    bin) nn=neighbors.ibin dd=distances.fbin ;;
    esac
    shift 2
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-mpi.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/many"

# The job's settings, for the oracle, from the arguments (not from the run):
# the defaults of configs/default.yaml unless --set says otherwise.
job="" k=5 metric=l2 weights=uniform temperature=0.07
generate=() rest=() merge=()
while [ $# -gt 0 ]; do
    if [ "$1" = --set ] && [ $# -ge 2 ]; then
        key=${2%%=*} value=${2#*=}
        case $key in
        knn.k) k=$value ;;
        knn.metric) metric=$value ;;
        knn.weights) weights=$value ;;
        knn.temperature) temperature=$value ;;
        esac
        case $key in
        synthetic.points | synthetic.queries | synthetic.dim | synthetic.classes | \
            synthetic.seed | synthetic.spread)
            generate+=("--${key#synthetic.}" "$value") ;;
        mpi.merge) merge=(--set "$2") ;;
        *) rest+=(--set "$2") ;;
        esac
        shift 2
    elif [ -z "$job" ] && [ "${1%.yaml}" != "$1" ] && [ -f "$1" ]; then
        job=$1
        shift
    else
        rest+=("$1")
        shift
    fi
done
outputs() {
    printf -- '--set\noutput.%s=%s\n' predictions "$1/predictions.csv" \
        probabilities "$1/probabilities.csv" neighbors "$1/$nn" distances "$1/$dd" \
        report "$1/report.yaml"
}
# What the reference depends on: the one-rank run's settings and the data
# set's, and the job file's contents (not its path: it may be a scratch
# copy of the same data set).
settings="arrays=$arrays generate=${generate[*]} rest=${rest[*]}"
[ -n "$job" ] && settings+=" job=$(cksum <"$job")"
# make_reference DIR: the data set (unless a job file was given) and the
# one-rank outputs in DIR/one.
make_reference() {
    local at=$1 one_args out_one i
    mkdir -p "$at/one"
    if [ -n "$job" ]; then
        [ ${#generate[@]} -eq 0 ] || { echo "synthetic.* settings with a job file"; exit 2; }
        one_args=("$job" "${rest[@]}")
    else
        "$lbknn" generate "$at/data" "${generate[@]}" >/dev/null ||
            { echo "lbknn generate ${generate[*]} failed"; exit 1; }
        one_args=()
        for ((i = 0; i < ${#generate[@]}; i += 2)); do
            one_args+=(--set "synthetic.${generate[i]#--}=${generate[i + 1]}")
        done
        one_args+=("${rest[@]}")
    fi
    mapfile -t out_one < <(outputs "$at/one")
    "$lbknn" run --quiet "${one_args[@]}" "${out_one[@]}" || { echo "one-rank run failed"; exit 1; }
    printf '%s\n' "$settings" >"$at/settings"
}
if [ "$mode" = reference ]; then
    # Made aside and moved into place whole, so that DIR is either all
    # there or not there.
    rm -rf "$ref" "$ref.new.$$"
    make_reference "$ref.new.$$"
    mv -T "$ref.new.$$" "$ref" || exit 1
    echo "ok: the one-rank reference is in $ref"
    exit 0
fi
if [ "$mode" = against ] && [ -f "$ref/settings" ]; then
    [ "$(cat "$ref/settings")" = "$settings" ] ||
        { echo "$ref was made for other settings: '$(cat "$ref/settings")', not '$settings'"; exit 1; }
    one=$ref
else
    [ "$mode" = against ] && echo "no reference in $ref: making the one-rank run here"
    one=$dir
    make_reference "$one"
fi
if [ -n "$job" ]; then
    data=$(dirname "$job")
else
    data=$one/data
    job=$data/job.yaml
fi
many_args=("$job" "${rest[@]}" "${merge[@]}")
mapfile -t out_many < <(outputs "$dir/many")
"$mpiexec" -n "$np" "$lbknn" run --quiet "${many_args[@]}" "${out_many[@]}" ||
    { echo "$np-rank run failed"; exit 1; }

status=0
for f in predictions.csv probabilities.csv $nn $dd; do
    if [ ! -s "$one/one/$f" ]; then
        echo "one-rank run wrote no $f"; status=1
    elif ! cmp "$one/one/$f" "$dir/many/$f"; then
        echo "$f differs between 1 and $np ranks"; status=1
    fi
done
# The report's numbers that do not depend on timing must agree too.
for key in '^accuracy' '^correct' '^evaluated' '^confusion' '^  - \[' '^top5_accuracy' \
    '^correct_top5'; do
    a=$(grep -E "$key" "$one/one/report.yaml") b=$(grep -E "$key" "$dir/many/report.yaml")
    [ "$a" = "$b" ] || { echo "report '$key': '$a' vs '$b'"; status=1; }
done
# So must the batch count, except under the spatial partition, where each
# rank batches its own slice of the queries: ceil(ceil(Q / P) / batch_size)
# batches, from the report's own query count and batch size.
report_number() { sed -n "s/$2/\1/p" "$1" | head -n 1; }
batches_one=$(report_number "$one/one/report.yaml" '^batches: \([0-9]*\)$')
batches_many=$(report_number "$dir/many/report.yaml" '^batches: \([0-9]*\)$')
if grep -q '^partition: {name: spatial,' "$dir/many/report.yaml"; then
    q=$(report_number "$dir/many/report.yaml" '^  query: {.*, rows: \([0-9]*\),.*')
    b=$(report_number "$dir/many/report.yaml" '^batch_size: \([0-9]*\)$')
    slice=$(( (q + np - 1) / np ))
    want=$(( (slice + b - 1) / b ))
    [ "$batches_many" = "$want" ] ||
        { echo "spatial: $batches_many batches, want ceil(ceil($q / $np) / $b) = $want"; status=1; }
elif [ "$batches_one" != "$batches_many" ]; then
    echo "report batches: $batches_one vs $batches_many"; status=1
fi
grep -q "^ranks: $np\$" "$dir/many/report.yaml" || { echo "report does not say ranks: $np"; status=1; }
# The NP-rank outputs against the oracle (K = $k, $metric, $weights).
"$verify" outputs "$data" "$k" "$metric" "$weights" "$dir/many/predictions.csv" \
    "$dir/many/$nn" "$dir/many/$dd" "$temperature" "probabilities=$dir/many/probabilities.csv" \
    "report=$dir/many/report.yaml" || { echo "$np-rank outputs differ from the oracle"; status=1; }
# LBK_SHOW_TIMINGS set: the NP-rank run's phase times (tests/multihost's
# slow link shows what the link cost).
[ -n "${LBK_SHOW_TIMINGS:-}" ] && sed -n '/^timings_s:/,/^  search:/p' "$dir/many/report.yaml"
[ "$status" -eq 0 ] && echo "ok: $np ranks match one rank and the oracle"
exit "$status"
