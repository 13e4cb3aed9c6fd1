#!/usr/bin/env bash
# Build the GPU check bundle: a folder that runs the exactness tests and the
# engine timings on a machine that can install nothing (the lent GPU machine
# has the NVIDIA driver, CMake and CUDA, but no Debian packages, no network
# and a newer glibc). Run here, on Debian:
#
#   bash scripts/gpu-bundle.sh [--no-build] [--build-dir B] [--no-fashion] DIR
#
# DIR (default gpu-bundle/, git-ignored) gets the binaries, every shared
# library they load that is neither glibc's nor the GPU driver's (Open MPI's
# runtime with its components, help texts and mpirun, PMIx, hwloc, libevent,
# libyaml, the OpenCL ICD loader, zlib, libdeflate, libudev), the test scripts, the case
# list generated from this build's CTest tests, Fashion-MNIST when it fits,
# and check.sh (from scripts/gpu-check.sh). Then, on the GPU machine, the
# device tool's one call is: `bash gpu-bundle/check.sh` with carry
# ["gpu-bundle"] (printed at the end).
#   --no-build    use B as it is (tests: the build under test)
#   --build-dir B the build to take (default build/, or $LBK_BUILD)
#   --no-fashion  leave the Fashion-MNIST files out
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LBK_BUNDLE_MAX_BYTES=$((48 * 1024 * 1024))
# The tests that prove exactness on the device: engines against the host
# oracle, ranks, end to end. e2e.install needs the build tree and CMake's
# install step, which do not travel; slow and slurm tests do not fit the lease.
LBK_BUNDLE_TESTS='^(brute|kdtree|mpi|e2e)[.]'
LBK_BUNDLE_EXCLUDE='^e2e\.install$'
LBK_BUNDLE_LABELS_OUT='slow|slurm'
# Benchmark programs check.sh times (found in the build by name).
LBK_BUNDLE_BENCH="lbknn kdtree_bench pbknn_select select_k fashion_bench"
# Open MPI components that load fabric libraries (UCX, libfabric, verbs, PSM)
# are left out: one node, shared memory and TCP are all the check uses.
LBK_BUNDLE_LIB_DENY='^(libuc[mpst]|libpsm|libinfinipath|libibverbs|librdmacm|libfabric|libefa|libnl-|liboshmem|libmca_common_(ucx|ofi|verbs)|libnuma)'
# glibc's own libraries and the GPU driver's come from the device machine.
LBK_BUNDLE_LIB_SYSTEM='^(linux-vdso|ld-linux|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libthread_db|libnss_[a-z]+|libcuda|libnvidia-[a-z-]+)\.so'

build=1 fashion=1 dir=
while [ $# -gt 0 ]; do
    case $1 in
    --no-build) build=0 ;;
    --build-dir) LBK_BUILD=$(cd "$2" && pwd); shift ;;
    --no-fashion) fashion=0 ;;
    -h|--help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-bundle.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1 ;;
    esac
    shift
done
dir=${dir:-$LBK_ROOT/gpu-bundle}

# A previous bundle is replaced; any other non-empty folder is refused.
lbk_bundle_prepare_dir() {
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -f "$dir/.lbk-bundle" ]; then
        echo "gpu-bundle.sh: $dir exists and is not a bundle; refusing to replace it" >&2
        exit 2
    fi
    rm -rf "$dir"
    mkdir -p "$dir"/{bin,etc,lib/openmpi,lib/pmix,share/openmpi,share/pmix,src,data}
    dir=$(cd "$dir" && pwd)
    : >"$dir/.lbk-bundle"  # marks the folder as ours, for the next run to replace
}

# The case list, from the build's own CTest tests (names and commands can
# change without this script knowing).
lbk_bundle_cases() {
    local json=$dir/.tests.json
    (cd "$LBK_BUILD" && ctest --show-only=json-v1 -LE "$LBK_BUNDLE_LABELS_OUT" \
        -R "$LBK_BUNDLE_TESTS" -E "$LBK_BUNDLE_EXCLUDE") >"$json"
    local mpiexec
    mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$LBK_BUILD/CMakeCache.txt")
    cmake -DJSON="$json" -DBUILD="$LBK_BUILD" -DSOURCE="$LBK_ROOT" -DMPIEXEC="$mpiexec" \
        -DCASES="$dir/cases.txt" -DFILES="$dir/.files" -P "$LBK_ROOT/scripts/gpu-bundle-cases.cmake"
    local kind path
    : >"$dir/workdirs.txt"
    while read -r kind path; do
        case $kind in
        bin) lbk_bundle_bin "$path" ;;
        src) mkdir -p "$dir/src/$(dirname "$path")" && cp -a "$LBK_ROOT/$path" "$dir/src/$path" ;;
        dir) echo "$path" >>"$dir/workdirs.txt" ;;
        esac
    done <"$dir/.files"
    # What the test scripts source or read beside the files they are given.
    (cd "$LBK_ROOT" && find tests \( -name '*.sh' -o -name '*.py' \) -print0 | xargs -0 cp -a --parents -t "$dir/src")
    cp -a "$LBK_ROOT/configs" "$dir/src/"
    rm -f "$json" "$dir/.files"
}

# lbk_bundle_bin FILE: one program into bin/, stripped.
declare -A lbk_bundle_bins=()
lbk_bundle_bin() {
    local name
    name=$(basename "$1")
    if [ -n "${lbk_bundle_bins[$name]:-}" ]; then
        [ "${lbk_bundle_bins[$name]}" = "$(readlink -f "$1")" ] && return 0
        echo "gpu-bundle.sh: two programs named $name: ${lbk_bundle_bins[$name]} and $1" >&2
        exit 1
    fi
    lbk_bundle_bins[$name]=$(readlink -f "$1")
    cp "$1" "$dir/bin/$name"
    strip --strip-unneeded "$dir/bin/$name" 2>/dev/null || true
}

lbk_bundle_bench() {
    local name path
    for name in $LBK_BUNDLE_BENCH; do
        # The shortest path, and never a copy inside a bundle (one may lie
        # in the build tree: the bundle tests make one there).
        path=$(find "$LBK_BUILD" -type f -name "$name" -perm -u+x -not -path '*/CMakeFiles/*' |
            while read -r p; do
                [ -e "$(dirname "$(dirname "$p")")/.lbk-bundle" ] || echo "${#p} $p"
            done | sort -n | awk 'NR == 1 {sub(/^[0-9]+ /, ""); print}')
        [ -n "$path" ] || { echo "gpu-bundle.sh: $name not found in $LBK_BUILD" >&2; exit 1; }
        lbk_bundle_bin "$path"
    done
}

# Open MPI 4 as Debian lays it out, under one relocatable prefix: check.sh
# sets OPAL_PREFIX and the directory variables to the bundle.
lbk_bundle_openmpi() {
    local orterun libdir pkglibdir pkgdatadir pmixdir libpmix so
    orterun=$(readlink -f "$(command -v orterun)")
    libdir=$(ompi_info --path libdir --parsable | sed -n 's/^path:libdir://p')
    pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
    pkgdatadir=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
    for name in mpirun mpiexec orterun; do cp "$orterun" "$dir/bin/$name"; done
    cp "$(readlink -f "$(command -v orted)")" "$dir/bin/orted"
    cp "$(readlink -f "$(command -v ompi_info)")" "$dir/bin/ompi_info"
    for so in "$pkglibdir"/mca_*.so; do
        lbk_bundle_loadable "$so" && cp "$so" "$dir/lib/openmpi/"
    done
    cp "$pkgdatadir"/help-*.txt "$dir/share/openmpi/"
    # Debian's settings (which components are off), as tested here.
    local sysconfdir
    sysconfdir=$(ompi_info --path sysconfdir --parsable | sed -n 's/^path:sysconfdir://p')
    cp "$sysconfdir"/openmpi-mca-params.conf "$sysconfdir"/openmpi-default-hostfile "$dir/etc/"
    # PMIx (external to Open MPI on Debian): its plugins and help texts.
    libpmix=$(readlink -f "$(ldd "$pkglibdir/mca_pmix_ext3x.so" | awk '$1 ~ /^libpmix\.so/ {print $3}')")
    pmixdir=$(dirname "$(dirname "$libpmix")")  # its prefix: lib/ and share/ below
    while read -r so; do
        lbk_bundle_loadable "$so" && cp "$so" "$dir/lib/pmix/"
    done < <(find "$pmixdir" -maxdepth 4 -name 'pmix_mca_*.so')
    find "$pmixdir" -maxdepth 5 -path '*/share/pmix/help-*.txt' -exec cp -t "$dir/share/pmix/" {} +
    [ -n "$(ls "$dir/lib/pmix")" ] || { echo "gpu-bundle.sh: no PMIx plugins under $pmixdir" >&2; exit 1; }
    echo "openmpi: libdir $libdir, components $pkglibdir, help $pkgdatadir, pmix $pmixdir" \
        >>"$dir/.origin"
}

# True when FILE loads no library of the deny list.
lbk_bundle_loadable() {
    ! ldd "$1" | awk '{print $1}' | grep -qE "$LBK_BUNDLE_LIB_DENY"
}

# Every library the bundle's programs and components load, except glibc's
# and the driver's, under its soname in lib/.
lbk_bundle_libs() {
    local f name path
    while read -r name path; do
        [[ $name =~ $LBK_BUNDLE_LIB_SYSTEM ]] && continue
        if [ "$path" = "not" ]; then
            echo "gpu-bundle.sh: $name is needed but not found here" >&2
            exit 1
        fi
        [ -e "$dir/lib/$name" ] && continue
        cp -L "$path" "$dir/lib/$name"
        strip --strip-unneeded "$dir/lib/$name" 2>/dev/null || true
        echo "$name $(dpkg -S "*/$(basename "$(readlink -f "$path")")" 2>/dev/null |
            sed 's/: .*//' | head -n 1)" >>"$dir/.libs"
    done < <(for f in "$dir"/bin/* "$dir"/lib/openmpi/*.so "$dir"/lib/pmix/*.so; do
                 ldd "$f" 2>/dev/null | awk '/=>/ {print $1, $3}'
             done | sort -u)
}

lbk_bundle_fashion() {
    local src=/usr/share/datasets/fashion-mnist
    [ "$fashion" = 1 ] || return 0
    if [ ! -r "$src/train-images-idx3-ubyte.gz" ]; then
        echo "gpu-bundle.sh: no Fashion-MNIST in $src (Debian: dataset-fashion-mnist);" \
             "check.sh will skip that timing unless given --fashion DIR" >&2
        return 0
    fi
    mkdir -p "$dir/data/fashion-mnist"
    cp "$src"/*-ubyte.gz "$dir/data/fashion-mnist/"
}

lbk_bundle_manifest() {
    {
        echo "# lbknn GPU check bundle"
        echo "made: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m), $(ldd --version | head -n 1)"
        echo "source: $(git -C "$LBK_ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
        echo "build: $LBK_BUILD ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$LBK_BUILD/CMakeCache.txt"))"
        echo "cases: $(wc -l <"$dir/cases.txt") tests from ctest -R '$LBK_BUNDLE_TESTS' -E '$LBK_BUNDLE_EXCLUDE' -LE '$LBK_BUNDLE_LABELS_OUT'"
        cat "$dir/.origin"
        echo "## libraries (soname, Debian package)"
        sort "$dir/.libs"
        echo "## files (bytes)"
        (cd "$dir" && find . -type f ! -name MANIFEST.txt ! -name '.*' -printf '%s %P\n' | sort -k2)
    } >"$dir/MANIFEST.txt"
    rm -f "$dir/.origin" "$dir/.libs"
}

lbk_bundle_size_check() {
    local bytes
    bytes=$(du -sb "$dir" | cut -f1)
    if [ "$bytes" -gt "$LBK_BUNDLE_MAX_BYTES" ] && [ -d "$dir/data/fashion-mnist" ]; then
        echo "gpu-bundle.sh: $((bytes / 1048576)) MiB is over 48 MiB; leaving Fashion-MNIST out" >&2
        rm -rf "$dir/data/fashion-mnist"
        bytes=$(du -sb "$dir" | cut -f1)
    fi
    if [ "$bytes" -gt "$LBK_BUNDLE_MAX_BYTES" ]; then
        echo "gpu-bundle.sh: the bundle is $((bytes / 1048576)) MiB, over 48 MiB" >&2
        exit 1
    fi
    echo "bundle: $dir, $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB"
}

if [ "$build" = 1 ]; then
    lbk_install $LBK_BUILD_PACKAGES $([ "$fashion" = 1 ] && echo dataset-fashion-mnist)
    lbk_build >/dev/null
fi
[ -f "$LBK_BUILD/CMakeCache.txt" ] || { echo "gpu-bundle.sh: no build in $LBK_BUILD" >&2; exit 1; }
lbk_bundle_prepare_dir
lbk_bundle_cases
lbk_bundle_bench
lbk_bundle_openmpi
lbk_bundle_libs
lbk_bundle_fashion
install -m 0755 "$LBK_ROOT/scripts/gpu-check.sh" "$dir/check.sh"
lbk_bundle_manifest
lbk_bundle_size_check
rel=${dir#"$LBK_ROOT"/}
if [ "$rel" = "$dir" ] || ! git -C "$LBK_ROOT" check-ignore -q "$rel"; then
    echo "note: the device tool carries only git-ignored folders inside the repository;" \
         "$dir is not one" >&2
fi
cat <<EOF
device-tool call when a GPU is lent (one call; check.sh stops itself by ~7.3 minutes):
  run  command: bash $rel/check.sh   carry: ["$rel"]   timeout_s: 480
the same check here on PoCL, small sizes:  bash $rel/check.sh --cpu-dry-run
EOF
