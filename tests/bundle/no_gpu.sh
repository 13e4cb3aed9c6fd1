#!/usr/bin/env bash
# The GPU check on a machine without a GPU must stop within seconds, with
# exit 2, saying what it looked for and where, before running any test.
#
# usage: no_gpu.sh BUNDLE OUTDIR CASE
#   no-driver  no libnvidia-opencl.so.1 anywhere (skipped where one exists)
#   no-device  a driver library is given (PoCL's, standing in for NVIDIA's)
#              but it offers no GPU
set -u
bundle=$1 out=$2 case=$3
fail() { echo "FAIL: $*" >&2; [ -f "$out/log" ] && sed 's/^/  | /' "$out/log" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"

case $case in
no-driver)
    for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
        [ -e "$d/libnvidia-opencl.so.1" ] && { echo "SKIP: this machine has $d/libnvidia-opencl.so.1"; exit 77; }
    done
    want=("looked for libnvidia-opencl.so.1" "/usr/local/nvidia/lib64" "/usr/lib/x86_64-linux-gnu"
          "ldconfig" "/etc/OpenCL/vendors" "LD_LIBRARY_PATH=" "LBK_OPENCL_DRIVER")
    env=()
    ;;
no-device)
    pocl=$(ls /usr/lib/x86_64-linux-gnu/libpocl.so.2 2>/dev/null) || { echo "SKIP: no PoCL"; exit 77; }
    want=("OpenCL driver: $pocl" "no GPU OpenCL device is usable")
    env=(LBK_OPENCL_DRIVER="$pocl")
    ;;
*) fail "unknown case $case" ;;
esac

start=$SECONDS
env ${env[@]+"${env[@]}"} OUT="$out" LBK_CHECK_ALLOW_CPU=0 timeout 60 bash "$bundle/check.sh" >"$out/log" 2>&1
rc=$?
took=$((SECONDS - start))
echo "check.sh: exit $rc after $took s"
[ $rc -eq 2 ] || fail "exit $rc, expected 2"
[ $took -le 15 ] || fail "took $took s; it must give up within seconds"
for w in "${want[@]}"; do
    grep -qF -- "$w" "$out/log" || fail "the output does not say '$w'"
    grep -qF -- "$w" "$out/summary.txt" || fail "summary.txt (what comes back from \$OUT) lacks '$w'"
done
! grep -q '^== exactness' "$out/log" || fail "it ran tests without a GPU"
echo "PASS: $case"
