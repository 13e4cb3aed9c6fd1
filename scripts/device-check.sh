#!/usr/bin/env bash
# The GPU check on a Debian machine that has a GPU and can install packages:
# makes the bundle (scripts/gpu-bundle.sh, into gpu-bundle/) and runs its
# check.sh, so that it is the same check as on the lent GPU machine, where
# only the bundle travels (see docs/development.md, "GPU check").
#   bash scripts/device-check.sh [check.sh arguments, e.g. --cpu-dry-run]
# Results: stdout and bench/out/device-check/ (summary.txt, results.tsv, ...).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bash "$LBK_ROOT/scripts/gpu-bundle.sh" "$LBK_ROOT/gpu-bundle"
OUT=${OUT:-$LBK_ROOT/bench/out/device-check} exec bash "$LBK_ROOT/gpu-bundle/check.sh" "$@"
