#!/usr/bin/env bash
# install.switches_off: what a packager's minimal build gives. A fresh build
# of this source with LBKNN_WITH_HDF5, LBKNN_BUILD_TESTS and
# LBKNN_BUILD_BENCH all OFF configures with one line per dependency, builds
# (no test or benchmark target exists), and passes every install.* scenario
# (install.sh against that build); without HDF5 the library links no
# libhdf5, --version says so and an .hdf5 input is refused naming the
# switch. A configure without OpenCL stops with the line that says what to
# install.
# usage: switches_off.sh SOURCE WORK GATE
#   GATE: lbk_opencl_gate, which exits 77 where no OpenCL device exists (the
#   scenarios that run a program on the device are then skipped).
set -euo pipefail
SOURCE=$1 WORK=$2 GATE=$3
source "$SOURCE/tests/expect.sh"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
BUILD=$WORK/build

SECONDS=0
cmake -S "$SOURCE" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLBKNN_WITH_HDF5=OFF \
    -DLBKNN_BUILD_TESTS=OFF -DLBKNN_BUILD_BENCH=OFF >configure.log 2>&1 ||
    { cat configure.log >&2; fail "configure with the three switches off"; }
grep '^-- lbknn: ' configure.log
for line in "MPI: *found" "OpenCL: *found" "libyaml: *found" "zlib: *found" \
    "libdeflate: *found" "HDF5: *off (LBKNN_WITH_HDF5=OFF)" "tests: *OFF" "benchmarks: *OFF"; do
    grep -q -- "^-- lbknn: $line" configure.log || fail "no configure line '$line'"
done
cmake --build "$BUILD" -j"$(nproc)" >build.log 2>&1 || { tail -50 build.log >&2; fail "build"; }
echo "configured and built in $SECONDS s"
# Nothing of the tests or benchmarks was even defined.
if cmake --build "$BUILD" --target help | grep -E '^\.\.\. (test_|bench_|lbk_test|lbk_opencl_gate)'; then
    fail "test or benchmark targets exist with the switches off"
fi
[ ! -f "$BUILD/CTestTestfile.cmake" ] || fail "CTest files with LBKNN_BUILD_TESTS=OFF"

# No HDF5: not linked, said by --version, refused by a job with its reason.
if readelf -d "$BUILD/liblbknn.so" | grep -q 'NEEDED.*hdf5'; then
    fail "liblbknn links libhdf5 with LBKNN_WITH_HDF5=OFF"
fi
"$BUILD/lbknn" --version >version.txt
grep -qx "hdf5: not built in" version.txt || { cat version.txt; fail "--version's hdf5 line"; }
printf 'x' >points.hdf5
status=0
"$BUILD/lbknn" check --set reference.path=points.hdf5 --set query.path=points.hdf5 \
    >out.txt 2>err.txt || status=$?
[ "$status" -eq 2 ] || { cat err.txt >&2; fail "lbknn check of an .hdf5 input: exit $status, not 2"; }
expect_err "points.hdf5: this lbknn was built without HDF5 (LBKNN_WITH_HDF5=OFF)"

# Every install scenario against this build.
for scenario in cmake_package pkg_config soname destdir twice cmake_version modulefile; do
    status=0
    command=(bash "$SOURCE/tests/install/install.sh" "$scenario" "$BUILD" "$WORK/work-$scenario"
        "$SOURCE" lib include)
    if [[ $scenario == cmake_package || $scenario == pkg_config ]]; then
        "$GATE" "${command[@]}" >"$scenario.log" 2>&1 || status=$?
    else
        "${command[@]}" >"$scenario.log" 2>&1 || status=$?
    fi
    case $status in
    0) echo "install.$scenario: passed" ;;
    77) echo "install.$scenario: skipped ($(tail -n 1 "$scenario.log"))" ;;
    *) cat "$scenario.log" >&2; fail "install.$scenario against the switches-off build" ;;
    esac
done

# A missing dependency: the line that says what to install, then stop.
if cmake -S "$SOURCE" -B "$WORK/no-opencl" -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON \
    -DLBKNN_BUILD_TESTS=OFF -DLBKNN_BUILD_BENCH=OFF >no-opencl.log 2>&1; then
    fail "configure succeeded without OpenCL"
fi
# CMake wraps the message: read it as one line.
tr -s ' \n' '  ' <no-opencl.log | grep -q "lbknn: OpenCL: missing. .*ocl-icd-opencl-dev" ||
    { cat no-opencl.log >&2; fail "no 'OpenCL: missing' line naming the package"; }
echo "PASS install.switches_off ($SECONDS s)"
