#!/bin/bash
# Injected failures on one rank: every rank must exit with the same code,
# the cause's (2 for a bad input, 1 for a runtime failure), and so must
# mpirun (a hang is caught by the CTest TIMEOUT); stderr must hold exactly
# one error line, from the failing rank, naming the cause, and no output file
# may be left behind.
#
# usage: fail_case.sh LBKNN MPIEXEC CASE DATA_DIR
#   csv_bad_row  4 ranks; the reference CSV's line 38 (data row 36, in rank
#                3's shard [30, 40)) holds 'abc'
#   csv_bad_query 3 ranks, row shards; the query CSV's line 5 holds NaN
#                (rank 0 reads the queries)
#   device_list  2 ranks; device.list=[0,7]: node-local rank 1 asks for a
#                device index no machine here has
#   spatial_bad_row   csv_bad_row under the spatial partition: rank 3 fails
#                before the decomposition's first collective
#   spatial_bad_query 3 ranks, spatial partition: each rank reads its own
#                slice of the 10 queries ([0,3), [3,6), [6,10)); line 10
#                (query 8) holds NaN, so rank 2 fails
set -u
lbknn=$1 mpiexec=$2 case=$3 data=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/lbk-fail.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
mkdir out

outputs=(--set output.predictions=out/predictions.csv --set output.neighbors=out/neighbors.ivecs
         --set output.distances=out/distances.fvecs --set output.report=out/report.yaml)
csv_args=(--set reference.path=ref.csv --set reference.label_column=4 --set reference.header=true
          --set query.path=q.csv --set query.label_column=4 --set query.header=true)
case "$case" in
csv_bad_row | spatial_bad_row)
    np=4 rank=3 code=2 want='ref\.csv:38'
    # 40 data rows after the header, the bad value on file line 38.
    head -n 41 "$data/blobs-train.csv" | sed -e '38s/^[^,]*,[^,]*/0.1,abc/' >ref.csv
    head -n 11 "$data/blobs-test.csv" >q.csv
    grep -q abc ref.csv || { echo "could not inject the bad row"; exit 1; }
    args=("${csv_args[@]}" --set mpi.partition=shard)
    [ "$case" = spatial_bad_row ] && args=("${csv_args[@]}" --set mpi.partition=spatial)
    ;;
csv_bad_query)
    np=3 rank=0 code=2 want='q\.csv:5'
    # Rank 0 reads the queries and broadcasts them batch by batch.
    head -n 41 "$data/blobs-train.csv" >ref.csv
    head -n 11 "$data/blobs-test.csv" | sed -e '5s/^[^,]*/nan/' >q.csv
    args=("${csv_args[@]}" --set mpi.partition=shard)
    ;;
spatial_bad_query)
    np=3 rank=2 code=2 want='q\.csv:10'
    head -n 41 "$data/blobs-train.csv" >ref.csv
    head -n 11 "$data/blobs-test.csv" | sed -e '10s/^[^,]*/nan/' >q.csv
    args=("${csv_args[@]}" --set mpi.partition=spatial --set knn.engine=kdtree)
    ;;
device_list)
    np=2 rank=1 code=1 want='device.*7'
    args=(--set synthetic.points=200 --set synthetic.queries=20 '--set' 'device.list=[0,7]')
    ;;
*)
    echo "unknown case $case"; exit 2 ;;
esac

# Each rank records its own exit status, so "every rank failed" is checked
# rank by rank. The wrapper itself exits 0: otherwise mpirun kills the other
# ranks as soon as the first one exits non-zero, before they record theirs.
"$mpiexec" -n "$np" sh -c '"$0" "$@"; echo "$?" >"rc.$OMPI_COMM_WORLD_RANK"' \
    "$lbknn" run "${args[@]}" "${outputs[@]}" >stdout.txt 2>stderr.txt
cat stderr.txt >&2

status=0
for ((r = 0; r < np; r++)); do
    rc=$(cat "rc.$r" 2>/dev/null || echo missing)
    if [ "$rc" != "$code" ]; then
        echo "rank $r exit status: $rc (want $code)"; status=1
    fi
done
errors=$(grep -c 'error:' stderr.txt)
[ "$errors" -eq 1 ] || { echo "want exactly 1 error line, got $errors"; status=1; }
line=$(grep 'error:' stderr.txt | head -n 1)
case "$line" in
"lbknn[rank $rank]: error: "*) ;;
*) echo "error line does not come from rank $rank: $line"; status=1 ;;
esac
echo "$line" | grep -Eq "$want" || { echo "error line does not match /$want/"; status=1; }
left=$(ls -A out)
[ -z "$left" ] || { echo "files left in the output directory: $left"; status=1; }
# mpirun itself, without the wrapper, passes the one code on.
"$mpiexec" -n "$np" "$lbknn" run "${args[@]}" "${outputs[@]}" >/dev/null 2>&1
rc=$?
[ "$rc" -eq "$code" ] || { echo "mpirun exit status: $rc (want $code)"; status=1; }
[ "$status" -eq 0 ] && echo "ok: $case"
exit "$status"
