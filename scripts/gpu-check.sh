#!/usr/bin/env bash
# lbknn GPU check, run from a bundle made by scripts/gpu-bundle.sh (this file
# is copied there as check.sh). Needs only bash, coreutils (timeout), and the
# GPU driver: every other library comes from the bundle.
#
#   bash check.sh [--cpu-dry-run] [--exactness-only | --timing-only]
#                 [--cases REGEX] [--budget SECONDS] [--jobs N] [--fashion DIR]
#
# 1. Finds NVIDIA's OpenCL driver library (libnvidia-opencl.so.1) and points
#    the bundle's ICD loader at it through vendors/ inside the bundle; without
#    it, says what it looked for and where, and exits 2 within seconds.
# 2. Prints `lbknn devices`, checks every bundled program resolves its
#    libraries, and that mpirun starts two ranks.
# 3. Exactness on the GPU: the build's own tests (engines against the host
#    oracle, rank counts 1-4 on the one GPU, end to end), from cases.txt,
#    PASS/FAIL per case and a summary.
# 4. Timings: tree build at 1e6/1e7/1e8 3-D points, tree query (1e7
#    references, 1e6 queries, K=16), the PBKNN setting, Fashion-MNIST, a
#    1e7 x 128-d brute force and the default job.
# Every step has a timeout; no new step starts once the budget (default 420 s,
# LBK_CHECK_BUDGET_S; the exactness part at most 240 s, LBK_CHECK_EXACT_S) is
# spent, so the whole check ends within about 7.5 minutes.
# Results: stdout, and $OUT/ (the device tool's output folder; here
# bundle/out/): summary.txt, results.tsv, check.log, logs.tar.gz.
#
#   --cpu-dry-run   (or LBK_CHECK_ALLOW_CPU=1) take PoCL's CPU driver
#                   (libpocl.so.2), found the same way, small timing sizes,
#                   and a 1800 s budget
#   --cases REGEX   only the exactness cases whose name matches
#   --fashion DIR   Fashion-MNIST *-ubyte.gz files, when the bundle has none
#   LBK_OPENCL_DRIVER=FILE  the driver library to use, skipping the search
# Exit: 0 all passed, 1 a case or a timing failed, 2 no GPU or a broken
# bundle, 64 usage.
set -u -o pipefail

LBK_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LBK_BUNDLE

mode=gpu exact=1 timing=1 cases_re='' njobs='' fashion_dir=${LBK_FASHION_DIR:-}
budget=${LBK_CHECK_BUDGET_S:-}
[ "${LBK_CHECK_ALLOW_CPU:-0}" = 1 ] && mode=cpu
while [ $# -gt 0 ]; do
    case $1 in
    --cpu-dry-run) mode=cpu ;;
    --exactness-only) timing=0 ;;
    --timing-only) exact=0 ;;
    --cases) cases_re=$2; shift ;;
    --budget) budget=$2; shift ;;
    --jobs) njobs=$2; shift ;;
    --fashion) fashion_dir=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
    shift
done
# The GPU lease is short; a dry run on a loaded CPU is not.
[ -n "$budget" ] || { [ "$mode" = gpu ] && budget=420 || budget=1800; }
[[ $budget =~ ^[0-9]+$ ]] || { echo "check.sh: --budget wants seconds" >&2; exit 64; }

OUT=${OUT:-$LBK_BUNDLE/out}
mkdir -p "$OUT" || exit 2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lbk-check.XXXXXX") || exit 2
LBK_WORK=$WORK/tree
LOGS=$WORK/logs
mkdir -p "$LBK_WORK" "$LOGS/exact" "$LOGS/timing" "$WORK/res"
export LBK_WORK
: >"$OUT/summary.txt"
printf 'kind\tname\tstatus\tseconds\tbudget_s\tdetail\n' >"$OUT/results.tsv"
failed=0

say() { printf '%s\n' "$*"; }
note() { printf '%s\n' "$*" | tee -a "$OUT/summary.txt"; }
# result KIND NAME STATUS SECONDS BUDGET DETAIL
result() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" | tr -d '\r' >>"$OUT/results.tsv"; }
left() { echo $((budget - SECONDS)); }

# ---- the OpenCL driver ------------------------------------------------------

# Where a driver library may be: NVIDIA's container runtimes mount the driver
# under /usr/local/nvidia; distributions put it in the multiarch folder.
lbk_driver_dirs() {
    local d
    printf '%s\n' /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
        /usr/local/nvidia/lib/x86_64-linux-gnu
    tr ':' '\n' <<<"${LBK_ORIG_LD_LIBRARY_PATH:-}" | sed '/^$/d'
    printf '%s\n' /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/nvidia/current \
        /usr/lib64 /usr/lib /lib/x86_64-linux-gnu /lib64 /usr/local/cuda/lib64 \
        /usr/local/cuda/compat /usr/lib/wsl/lib
    for d in /usr/local/nvidia/lib* /opt/nvidia/*/lib*; do [ -d "$d" ] && echo "$d"; done
}

# lbk_find_driver NAME: prints the path of NAME (or NAME.*), searched in the
# folders above, then in ldconfig's cache, then in the system's ICD files.
lbk_find_driver() {
    local name=$1 d f icd lib
    if [ -n "${LBK_OPENCL_DRIVER:-}" ]; then
        [ -r "$LBK_OPENCL_DRIVER" ] && { echo "$LBK_OPENCL_DRIVER"; return 0; }
        return 1
    fi
    while read -r d; do
        for f in "$d/$name" "$d/${name%.so.*}".so.*; do
            [ -r "$f" ] && [ -f "$f" ] && { echo "$f"; return 0; }
        done
    done < <(lbk_driver_dirs | awk '!seen[$0]++')
    if command -v ldconfig >/dev/null 2>&1; then
        f=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}')
        [ -n "$f" ] && [ -r "$f" ] && { echo "$f"; return 0; }
    fi
    for icd in /etc/OpenCL/vendors/*.icd; do
        [ -r "$icd" ] || continue
        lib=$(head -n 1 "$icd")
        case $lib in
        /*"$name"*) [ -r "$lib" ] && { echo "$lib"; return 0; } ;;
        esac
    done
    return 1
}

lbk_no_driver() {
    local name=$1 icd
    {
        say "check.sh: no $2 OpenCL driver found: looked for $name (and ${name%.so.*}.so.*)"
        say "  in \$LBK_OPENCL_DRIVER: ${LBK_OPENCL_DRIVER:-(unset)}"
        say "  in the folders (first hit wins):"
        lbk_driver_dirs | awk '!seen[$0]++' | while read -r d; do
            if [ -d "$d" ]; then say "    $d"; else say "    $d  (absent)"; fi
        done
        if command -v ldconfig >/dev/null 2>&1; then
            say "  in ldconfig -p: $(ldconfig -p 2>/dev/null | grep -c 'libnvidia\|libpocl\|libOpenCL') OpenCL-related entries, none named $name"
        else
            say "  in ldconfig -p: no ldconfig on this machine"
        fi
        say "  in the ICD files /etc/OpenCL/vendors/*.icd:"
        for icd in /etc/OpenCL/vendors/*.icd; do
            [ -e "$icd" ] && say "    $icd: $(head -n 1 "$icd")"
        done
        ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 || say "    (none)"
        say "  environment: LD_LIBRARY_PATH=${LBK_ORIG_LD_LIBRARY_PATH:-} OCL_ICD_VENDORS=${LBK_ORIG_OCL_ICD_VENDORS:-}" \
            "NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES:-} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
        say "  GPU device files: $(echo /dev/nvidia*)"
        if command -v nvidia-smi >/dev/null 2>&1; then
            say "  nvidia-smi -L: $(timeout 10 nvidia-smi -L 2>&1 | head -n 4 | tr '\n' ' ')"
        else
            say "  nvidia-smi: not on PATH"
        fi
        say "  Set LBK_OPENCL_DRIVER=/path/to/$name, or use --cpu-dry-run for PoCL."
    } | tee -a "$OUT/summary.txt" >&2
}

# Points the bundle's ICD loader at the driver, and nothing else.
lbk_setup_driver() {
    local name vendor kind
    if [ "$mode" = gpu ]; then
        name=libnvidia-opencl.so.1 vendor=nvidia kind=GPU
    else
        name=libpocl.so.2 vendor=pocl kind="CPU (dry run)"
    fi
    LBK_DRIVER=$(lbk_find_driver "$name") || { lbk_no_driver "$name" "$kind"; lbk_finish 2; }
    local vendors=$LBK_BUNDLE/vendors
    rm -rf "$vendors"
    mkdir -p "$vendors" 2>/dev/null || vendors=$WORK/vendors  # a read-only bundle
    mkdir -p "$vendors"
    echo "$LBK_DRIVER" >"$vendors/$vendor.icd"
    export OCL_ICD_VENDORS=$vendors
    # The driver's own dependencies (libcuda.so.1, ...) lie beside it.
    LD_LIBRARY_PATH=$LBK_BUNDLE/lib:$(dirname "$LBK_DRIVER")${LBK_ORIG_LD_LIBRARY_PATH:+:$LBK_ORIG_LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    note "OpenCL driver: $LBK_DRIVER (via $vendors/$vendor.icd)"
}

# ---- the bundle's environment -----------------------------------------------

lbk_setup_env() {
    # In case the copy to the device machine dropped the execute bits.
    chmod u+x "$LBK_BUNDLE"/bin/* 2>/dev/null
    find "$LBK_BUNDLE/src" -name '*.sh' -exec chmod u+x {} + 2>/dev/null
    LBK_ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
    LBK_ORIG_OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-}
    export PATH=$LBK_BUNDLE/bin:$PATH
    export LD_LIBRARY_PATH=$LBK_BUNDLE/lib${LBK_ORIG_LD_LIBRARY_PATH:+:$LBK_ORIG_LD_LIBRARY_PATH}
    # Open MPI and PMIx, relocated: every directory they were built with.
    local b=$LBK_BUNDLE
    export OPAL_PREFIX=$b OPAL_EXEC_PREFIX=$b OPAL_BINDIR=$b/bin OPAL_LIBDIR=$b/lib \
        OPAL_PKGLIBDIR=$b/lib/openmpi OPAL_DATAROOTDIR=$b/share OPAL_DATADIR=$b/share \
        OPAL_PKGDATADIR=$b/share/openmpi OPAL_SYSCONFDIR=$b/etc
    export PMIX_PREFIX=$b PMIX_EXEC_PREFIX=$b PMIX_LIBDIR=$b/lib PMIX_PKGLIBDIR=$b/lib/pmix \
        PMIX_DATADIR=$b/share PMIX_PKGDATADIR=$b/share/pmix PMIX_SYSCONFDIR=$b/etc
    export OMPI_MCA_mca_base_component_path=$b/lib/openmpi
    export PMIX_MCA_mca_base_component_path=$b/lib/pmix
    # A test script: root, one node, more ranks than cores allowed; no
    # ssh needed (isolated launcher), no binding, no single-copy kernel
    # support assumed inside a VM or sandbox.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
    export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl=self,vader,tcp
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    # hwloc must not load the machine's plugins, built for another hwloc.
    mkdir -p "$WORK/hwloc-plugins"
    export HWLOC_PLUGINS_PATH=$WORK/hwloc-plugins
}

# Every bundled program and plugin must resolve its libraries; prints where
# lbknn's come from (the bundle, or the system for glibc and the driver).
lbk_check_libs() {
    local f missing
    if ! command -v ldd >/dev/null 2>&1; then
        note "libraries: no ldd here; not checked"
        return 0
    fi
    for f in "$LBK_BUNDLE"/bin/* "$LBK_BUNDLE"/lib/openmpi/*.so "$LBK_BUNDLE"/lib/pmix/*.so; do
        echo "== $f"
        ldd "$f" 2>&1
    done >"$LOGS/ldd.txt"
    missing=$(grep 'not found' "$LOGS/ldd.txt" | sort -u)
    say "libraries of lbknn:"
    ldd "$LBK_BUNDLE/bin/lbknn" | awk '/=>/ {printf "  %s => %s\n", $1, $3}'
    if [ -n "$missing" ]; then
        note "libraries: NOT FOUND: $(echo "$missing" | awk '{print $1}' | sort -u | tr '\n' ' ')"
        note "  (see ldd.txt in logs.tar.gz)"
        return 1
    fi
    note "libraries: every bundled program and plugin resolves ($(grep -c '^==' "$LOGS/ldd.txt") files)"
}

lbk_devices() {
    local log=$LOGS/devices.txt
    timeout 60 lbknn devices >"$log" 2>&1
    local rc=$?
    tee -a "$OUT/summary.txt" <"$log"
    if [ "$mode" = gpu ] && { [ $rc -ne 0 ] || ! timeout 60 lbknn devices --type gpu >"$log.gpu" 2>&1; }; then
        note "check.sh: the driver $LBK_DRIVER was given to the ICD loader, but no GPU OpenCL device is usable."
        note "  lbknn devices: exit $rc; lbknn devices --type gpu: $(tail -n 1 "$log.gpu" 2>/dev/null)"
        note "  libraries of the driver not found: $(ldd "$LBK_DRIVER" 2>&1 | grep 'not found' | awk '{print $1}' | tr '\n' ' ')"
        note "  libcuda.so.1 (loaded by the driver): $(ls "$(dirname "$LBK_DRIVER")"/libcuda.so.1 2>/dev/null ||
            ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" {print $NF; exit}')"
        return 1
    fi
    [ $rc -eq 0 ] || { note "check.sh: lbknn devices failed (exit $rc)"; return 1; }
}

lbk_machine() {
    note "# lbknn GPU check, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), mode $mode, budget ${budget} s"
    note "machine: $(uname -srm), $(nproc) CPUs, $(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'glibc ?')"
    sed -n '2,4p' "$LBK_BUNDLE/MANIFEST.txt" 2>/dev/null | sed 's/^/bundle /' | tee -a "$OUT/summary.txt"
    if command -v nvidia-smi >/dev/null 2>&1; then
        note "nvidia-smi: $(timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
            --format=csv,noheader 2>&1 | head -n 2 | tr '\n' ' ')"
    fi
}

lbk_mpi_smoke() {
    local log=$LOGS/mpi-smoke.txt n
    timeout 60 mpirun -n 2 lbknn --version >"$log" 2>&1
    n=$(grep -c '^lbknn ' "$log")
    if [ "$n" -eq 2 ]; then
        note "mpirun: 2 ranks start ($(head -n 1 "$log"))"
        return 0
    fi
    note "mpirun: FAILED to start 2 ranks; its output:"
    sed 's/^/  /' "$log" | head -n 30 | tee -a "$OUT/summary.txt"
    return 1
}

# ---- exactness --------------------------------------------------------------

# lbk_run_case LINE DEADLINE: one cases.txt line (see gpu-bundle-cases.cmake).
lbk_run_case() {
    local deadline=$2
    eval "set -- $1"
    local name=$1 tmo=$2 skip_rc=$3 will_fail=$4 pass_re=$5 fail_re=$6 wd=$7
    shift 8
    local log=$LOGS/exact/$name.log res=$WORK/res/$name
    local now=$SECONDS rc status
    [ "$tmo" -gt 0 ] || tmo=1500
    [ $((deadline - now)) -lt "$tmo" ] && tmo=$((deadline - now))
    if [ "$tmo" -lt 5 ]; then
        echo "NOTRUN 0" >"$res"
        return
    fi
    (cd "${wd:-$LBK_WORK}" && exec timeout -k 10 "$tmo" "$@") >"$log" 2>&1
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        status=TIMEOUT
    elif [ -n "$skip_rc" ] && [ $rc -eq "$skip_rc" ]; then
        status=SKIP
    elif [ -n "$pass_re" ]; then
        grep -Eq -- "$pass_re" "$log" && status=PASS || status=FAIL
    elif [ "$will_fail" = 1 ]; then
        [ $rc -ne 0 ] && status=PASS || status=FAIL
    else
        [ $rc -eq 0 ] && status=PASS || status=FAIL
    fi
    if [ -n "$fail_re" ] && grep -Eq -- "$fail_re" "$log"; then status=FAIL; fi
    echo "$status $((SECONDS - now)) $rc" >"$res"
    printf '%-7s %-55s %4d s\n' "$status" "$name" $((SECONDS - now))
    if [ "$status" = FAIL ] || [ "$status" = TIMEOUT ]; then
        tail -n 15 "$log" | sed 's/^/        | /'
    fi
}

lbk_exactness() {
    local line name cap deadline start=$SECONDS n=0
    local -a lines=()
    cap=${LBK_CHECK_EXACT_S:-240}
    [ "$mode" = gpu ] || cap=$budget
    deadline=$((SECONDS + cap))
    [ "$deadline" -gt "$budget" ] && deadline=$budget
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        name=$(eval "set -- $line"; echo "$1")
        [ -z "$cases_re" ] || [[ $name =~ $cases_re ]] || continue
        lines+=("$line")
    done <"$LBK_BUNDLE/cases.txt"
    if [ ${#lines[@]} -eq 0 ]; then
        note "exactness: FAILED: no case in cases.txt matches '${cases_re}'"
        failed=1
        return
    fi
    while read -r line; do mkdir -p "$LBK_WORK/$line"; done <"$LBK_BUNDLE/workdirs.txt"
    say ""
    say "== exactness: ${#lines[@]} cases, $njobs at a time (budget $((deadline - SECONDS)) s)"
    for line in "${lines[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do wait -n; done
        lbk_run_case "$line" "$deadline" &
        n=$((n + 1))
    done
    wait
    lbk_exactness_summary "$start" "${lines[@]}"
}

lbk_exactness_summary() {
    local start=$1 line name status secs rc pass=0 fail=0 skip=0 notrun=0 families
    shift
    for line in "$@"; do
        name=$(eval "set -- $line"; echo "$1")
        read -r status secs rc <"$WORK/res/$name" 2>/dev/null || status=NOTRUN secs=0
        case $status in
        PASS) pass=$((pass + 1)) ;;
        SKIP) skip=$((skip + 1)) ;;
        NOTRUN) notrun=$((notrun + 1)); say "NOTRUN  $name (time guard)" ;;
        *) fail=$((fail + 1)) ;;
        esac
        result exact "$name" "$status" "$secs" "" "exit ${rc:-}"
        [ "$status" = PASS ] || [ "$status" = SKIP ] || echo "$status $name" >>"$WORK/exact-bad.txt"
    done
    families=$(for line in "$@"; do eval "set -- $line"; echo "${1%%[._]*}"; done |
        sort | uniq -c | awk '{printf "%s%s %d", sep, $2, $1; sep=", "}')
    note ""
    note "exactness: $pass passed, $fail failed, $skip skipped, $notrun not run, of $# ($families) in $((SECONDS - start)) s"
    [ -f "$WORK/exact-bad.txt" ] && sed 's/^/  /' "$WORK/exact-bad.txt" | tee -a "$OUT/summary.txt"
    [ $fail -eq 0 ] && [ $notrun -eq 0 ] || failed=1
}

# ---- timings ----------------------------------------------------------------

# lbk_step NAME BUDGET KEY CMD...: runs CMD under the time guard and prints its
# output; KEY is an extended regex of the lines that go into the summary.
lbk_step() {
    local name=$1 cap=$2 key=$3 log=$LOGS/timing/$1.log t rc start status keys
    shift 3
    t=$(left)
    [ "$t" -gt "$cap" ] && t=$cap
    if [ "$t" -lt 15 ]; then
        note "SKIP    $name: time guard ($(left) s of the ${budget} s budget left)"
        result time "$name" SKIP 0 "$cap" "time guard"
        return
    fi
    say ""
    say "== $name (budget $t s; $(left) s left of $budget)"
    start=$SECONDS
    if declare -F "$1" >/dev/null; then  # a function of this script
        export -f "$1"
        set -- bash -c '"$@"' _ "$@"
    fi
    timeout -k 10 "$t" "$@" >"$log" 2>&1
    rc=$?
    status=PASS
    [ $rc -eq 0 ] || status=FAIL
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && status=TIMEOUT
    [ $rc -eq 77 ] && status=SKIP
    if [ "$status" = PASS ] || [ "$status" = SKIP ]; then
        head -n 60 "$log"
    else
        tail -n 20 "$log" | sed 's/^/  | /'
        failed=1
    fi
    keys=$(grep -E -- "$key" "$log" | tr -s ' \t' ' ' | sed 's/^ //' | paste -sd ';' -)
    note "$(printf '%-7s %-26s %4d s  %s' "$status" "$name" $((SECONDS - start)) "${keys//;/; }")"
    result time "$name" "$status" $((SECONDS - start)) "$cap" "$keys"
}

# A step that cannot run here: says why, and is counted as skipped.
lbk_skip() {
    echo "$*"
    return 77
}

# lbknn run with a report; prints the report's device, phase times and
# throughput.
lbk_run_report() {
    local report=$1
    shift
    lbknn run --quiet --set output.report="$report" "$@" || return
    sed -n '/^devices:/,/^batch_size:/p; /^timings_s:/,/^queries_per_second:/p; /^accuracy:/p' \
        "$report" | sed -E 's/\{min: ([0-9.]+), avg: ([0-9.]+), max: ([0-9.]+)\}/\2 (min \1, max \3)/'

}

lbk_fashion_dir() {
    local d
    for d in "$fashion_dir" "$LBK_BUNDLE/data/fashion-mnist" /usr/share/datasets/fashion-mnist; do
        [ -n "$d" ] && [ -r "$d/train-images-idx3-ubyte.gz" ] && { echo "$d"; return 0; }
    done
    return 1
}

lbk_timings() {
    local n dev fdir sizes q pb sk fq bp bq dp dq row='^\| (N|[0-9])'
    if [ "$mode" = gpu ]; then
        dev=gpu sizes="1e6 1e7 1e8" q="1e7 1e6" pb="--m 1,8,64 --reps 5 --groups-sweep 1,8,32"
        fq=10000 bp=10000000 bq=10000 dp=100000 dq=10000
        sk="--k 16,64,256,1024,4096 --reps 3 --bubble-max-k 1024"
    else
        dev=cpu sizes="1e4 1e5" q="1e5 1e4" pb="--m 1 --reps 1 --groups-sweep 1"
        fq=100 bp=20000 bq=100 dp=20000 dq=2000
        sk="--k 16,256 --reps 1 --bubble-max-k 256"
    fi
    say ""
    say "== timings (device type $dev; cudaKDTree reference, RTX 4090: ~200 ms build at 1e7)"
    for n in $sizes; do
        local cap=45
        [ "$n" = 1e8 ] && cap=120
        lbk_step "tree.build.$n" "$cap" "$row" kdtree_bench build "$n" uniform radix rr 3
    done
    lbk_step "tree.query.${q% *}x${q#* }.k16" 120 "$row" kdtree_bench query $q 16 3
    lbk_step brute.pbknn 60 '^ +(m +refs|[0-9])' pbknn_select $pb
    lbk_step brute.select-vs-k 60 '^ *(k|[0-9])' select_k $sk
    if fdir=$(lbk_fashion_dir); then
        lbk_step brute.fashion-mnist 60 '^query time|^accuracy' \
            fashion_bench --dir "$fdir" --queries "$fq"
    else
        lbk_step brute.fashion-mnist 60 '^no data' lbk_skip "no data: no train-images-idx3-ubyte.gz" \
            "in --fashion DIR, $LBK_BUNDLE/data/fashion-mnist or /usr/share/datasets/fashion-mnist"
    fi
    local report_key='^  (read|build|query): |^  total|^queries_per_second'
    lbk_step "brute.${bp}x128.k16" 150 "$report_key" lbk_run_report "$WORK/brute128.yaml" \
        --set synthetic.points=$bp --set synthetic.dim=128 --set synthetic.queries=$bq \
        --set knn.k=16 --set knn.engine=brute --set device.type=$dev
    lbk_step default-job 60 "$report_key|^accuracy" lbk_run_report "$WORK/default.yaml" \
        --set synthetic.points=$dp --set synthetic.queries=$dq --set device.type=$dev
}

# ---- main -------------------------------------------------------------------

lbk_finish() {
    local rc=$1
    note ""
    note "check: $([ "$rc" -eq 0 ] && echo PASSED || echo FAILED) (exit $rc) in $SECONDS s; results in $OUT"
    tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null ||
        (cd "$LOGS" && find . -type f -exec sh -c 'for f; do echo "==> $f"; cat "$f"; done' _ {} +) \
            >"$OUT/logs.txt"
    rm -rf "$WORK"
    # Last, so that the end of the output (all a remote run may show) has it.
    say ""
    say "==== summary ($OUT/summary.txt)"
    cat "$OUT/summary.txt"
    exit "$rc"
}

lbk_main() {
    lbk_setup_env
    lbk_machine
    lbk_setup_driver
    lbk_check_libs || lbk_finish 2
    lbk_devices || lbk_finish 2
    lbk_mpi_smoke || failed=1
    if [ -z "$njobs" ]; then
        njobs=$(( $(nproc) / 2 ))
        [ "$njobs" -gt 8 ] && njobs=8
        [ "$njobs" -lt 1 ] && njobs=1
    fi
    [ "$exact" = 1 ] && lbk_exactness
    [ "$timing" = 1 ] && lbk_timings
    lbk_finish "$failed"
}

lbk_main 2>&1 | tee "$OUT/check.log"
exit "${PIPESTATUS[0]}"
