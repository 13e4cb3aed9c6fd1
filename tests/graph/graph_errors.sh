#!/usr/bin/env bash
# task: graph's input errors and the check command, one CTest test each.
# usage: graph_errors.sh LBKNN WORKDIR CASE
set -u
LBKNN=$1 WORK=$2 CASE=$3
source "$(cd "$(dirname "$0")" && pwd)/../expect.sh"
rm -rf "$WORK" && mkdir -p "$WORK/out" && cd "$WORK" || exit 1
graph=(--set task=graph --set synthetic.points=6 --set synthetic.classes=2
       --set output.graph=out/g.npz --set output.neighbors=out/n.npy)
case $CASE in
k-not-below-points)
    # Six points have five others each: K = 6 cannot be met.
    expect_exit 2 "$LBKNN" run "${graph[@]}" --set knn.k=6
    expect_err "knn.k = 6: task graph needs K other points, and each of the 6 points has 5"
    one_line
    no_outputs
    ;;
k-equal-others)
    # K = N - 1: every other point, the whole set but itself.
    expect_exit 0 "$LBKNN" run --quiet "${graph[@]}" --set knn.k=5
    [ -s out/g.npz ] && [ -s out/n.npy ] || fail "graph outputs missing"
    ;;
check)
    expect_exit 0 "$LBKNN" check --set task=graph --set synthetic.points=50 --set knn.k=4
    expect_out "the reference points themselves"
    ;;
*) fail "unknown case $CASE" ;;
esac
