#!/bin/bash
# Exactness across rank counts: the output files of `mpirun -n NP lbknn run`
# must be byte-identical to those of a plain one-rank run of the same job.
#
# usage: compare_ranks.sh LBKNN MPIEXEC NP [--arrays npy|bin] [lbknn run arguments...]
# --arrays: neighbours and distances as .npy, or as .ibin/.fbin, instead of
# .ivecs/.fvecs (every rank writes its slices of those too).
set -u
lbknn=$1 mpiexec=$2 np=$3
shift 3
nn=neighbors.ivecs dd=distances.fvecs
if [ "${1:-}" = --arrays ]; then
    case $2 in
    npy) nn=neighbors.npy dd=distances.npy ;;
    bin) nn=neighbors.ibin dd=distances.fbin ;;
    esac
    shift 2
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-mpi.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/one" "$dir/many"

outputs() {
    printf -- '--set\noutput.%s=%s\n' predictions "$1/predictions.csv" \
        probabilities "$1/probabilities.csv" neighbors "$1/$nn" distances "$1/$dd" \
        report "$1/report.yaml"
}
mapfile -t out_one < <(outputs "$dir/one")
mapfile -t out_many < <(outputs "$dir/many")

"$lbknn" run --quiet "$@" "${out_one[@]}" || { echo "one-rank run failed"; exit 1; }
"$mpiexec" -n "$np" "$lbknn" run --quiet "$@" "${out_many[@]}" ||
    { echo "$np-rank run failed"; exit 1; }

status=0
for f in predictions.csv probabilities.csv $nn $dd; do
    if [ ! -s "$dir/one/$f" ]; then
        echo "one-rank run wrote no $f"; status=1
    elif ! cmp "$dir/one/$f" "$dir/many/$f"; then
        echo "$f differs between 1 and $np ranks"; status=1
    fi
done
# The report's numbers that do not depend on timing must agree too.
for key in '^accuracy' '^correct' '^evaluated' '^confusion' '^top5_accuracy' \
    '^correct_top5'; do
    a=$(grep -E "$key" "$dir/one/report.yaml") b=$(grep -E "$key" "$dir/many/report.yaml")
    [ "$a" = "$b" ] || { echo "report '$key': '$a' vs '$b'"; status=1; }
done
# So must the batch count, except under the spatial partition, where each
# rank batches its own slice of the queries: ceil(ceil(Q / P) / batch_size)
# batches, from the report's own query count and batch size.
report_number() { sed -n "s/$2/\1/p" "$1" | head -n 1; }
batches_one=$(report_number "$dir/one/report.yaml" '^batches: \([0-9]*\)$')
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
[ "$status" -eq 0 ] && echo "ok: $np ranks match one rank"
exit "$status"
