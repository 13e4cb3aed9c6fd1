#!/usr/bin/env bash
# Does the sanitized pass's subset (tests/sanitize/subset.txt, with every
# `unit` test) reach every host line of src/ that the whole default suite
# reaches? On a coverage build (gcc --coverage), the subset runs first and
# the lines it executes are kept; then the rest of the sanitized pass's old
# set (every test but slow, nosanitize and oclgrind ones) runs, and every
# line of src/ that only those reach is printed, by file. Not a CTest test:
# it takes about as long as the plain suite; run it after changing the
# subset or adding host code that only full-matrix tests reach.
#
#   cmake -S . -B build-cov -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS='--coverage -O1' \
#         -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage
#   cmake --build build-cov -j && bash tests/sanitize/subset_coverage.sh build-cov
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
source "$here/../../scripts/common.sh"
lbk_mpi_env
lbk_pocl_cache_env
export LBK_TEST_REQUIRE_OPENCL=1
out=$build/subset-coverage
rm -rf "$out" && mkdir -p "$out"
pick="/usr/bin/python3 $here/subset_tests.py"

lines() { # the executed lines of src/, "file:line" a line, into $1
    /usr/bin/python3 "$here/gcov_lines.py" "$build" >"$1"
    find "$build" -name '*.gcda' -delete
}

cd "$build"
find . -name '*.gcda' -delete
$pick . --names >"$out/subset.txt"
$pick . --names --rest >"$out/rest.txt"
echo "subset: $(wc -l <"$out/subset.txt") tests, the rest: $(wc -l <"$out/rest.txt")"
ctest -j"$(nproc)" -I "$($pick .)" >"$out/subset.log" 2>&1 || true
lines "$out/subset-lines.txt"
ctest -j"$(nproc)" -I "$($pick . --rest)" >"$out/rest.log" 2>&1 || true
lines "$out/rest-lines.txt"
comm -13 <(sort -u "$out/subset-lines.txt") <(sort -u "$out/rest-lines.txt") >"$out/only-rest.txt"
echo "lines of src/ reached by the subset: $(sort -u "$out/subset-lines.txt" | wc -l); reached" \
    "only by the rest: $(wc -l <"$out/only-rest.txt") ($out/only-rest.txt)"
cut -d: -f1 "$out/only-rest.txt" | sort | uniq -c | sort -rn
