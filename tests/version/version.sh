#!/usr/bin/env bash
# usage: version.sh SCENARIO LBKNN SOURCE WORK BUILD_TYPE PYTHON PYTHONPATH
#   fields  every line of `lbknn --version` against what it must say: the
#           header's version, the source tree's own commit, the build type,
#           the compiler, and the OpenCL, MPI and HDF5 libraries this
#           machine has (each asked of another tool than lbknn)
#   report  a run's report has the same `build:` fields (needs a device)
#   python  lbknn.build_info() has the same fields
set -euo pipefail
SCENARIO=$1 LBKNN=$2 SOURCE=$3 WORK=$4 BUILD_TYPE=$5 PYTHON=$6 PYPATH=$7
source "$SOURCE/tests/expect.sh"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"

"$LBKNN" --version >version.txt 2>err.txt || { cat err.txt >&2; fail "lbknn --version failed"; }
cat version.txt
[ ! -s err.txt ] || { cat err.txt >&2; fail "lbknn --version wrote to stderr"; }
# field NAME: the value of the line "NAME: value" of version.txt.
field() { sed -n "s/^$1: //p" version.txt; }

case $SCENARIO in
fields)
    want=""
    for part in MAJOR MINOR PATCH; do
        want+=$(sed -n "s/^#define LBKNN_VERSION_$part \([0-9][0-9]*\)$/\1/p" "$SOURCE/src/api/lbknn.h").
    done
    want=${want%.}
    [ "$(head -n 1 version.txt)" = "lbknn $want" ] || fail "first line is not 'lbknn $want'"
    [ "$(wc -l <version.txt)" -eq 7 ] || fail "expected 7 lines"
    names=$(sed -n '2,$s/:.*//p' version.txt | tr '\n' ' ')
    [ "$names" = "commit build_type compiler opencl mpi hdf5 " ] || fail "fields: $names"
    # The commit: this tree's, when it is a git work tree of its own.
    commit=$(field commit)
    if git -C "$SOURCE" rev-parse --show-toplevel >/dev/null 2>&1 &&
        [ "$(realpath "$(git -C "$SOURCE" rev-parse --show-toplevel)")" = "$(realpath "$SOURCE")" ]; then
        head=$(git -C "$SOURCE" rev-parse --short=12 HEAD)
        [[ $commit == "$head" || $commit == "$head-dirty" ]] ||
            fail "commit '$commit', but HEAD is $head (a build since the last commit?)"
        if [ -n "$(git -C "$SOURCE" status --porcelain --untracked-files=no)" ]; then
            [ "$commit" = "$head-dirty" ] || fail "commit '$commit' for a changed tree"
        fi
    else
        [ "$commit" = release ] || fail "commit '$commit' outside a git work tree"
    fi
    [[ $(field build_type) == "$BUILD_TYPE"* ]] || fail "build_type is not $BUILD_TYPE"
    [[ $(field compiler) =~ ^[A-Za-z]+\ [0-9]+\.[0-9]+ ]] || fail "compiler: no name and version"
    # The libraries, as other tools on this machine name them.
    opencl=$(field opencl)
    [[ $opencl == loader* ]] || fail "opencl does not start with the loader"
    if command -v clinfo >/dev/null; then
        while read -r platform; do
            [[ $opencl == *"$platform"* ]] || fail "opencl lacks platform '$platform' (clinfo)"
        done < <(clinfo --raw 2>/dev/null | sed -n 's/.*CL_PLATFORM_VERSION *//p' |
            sed 's/^ *//; s/ *$//')
    fi
    if dpkg-query -W -f='${Version}' ocl-icd-libopencl1 >/dev/null 2>&1; then
        loader=$(dpkg-query -W -f='${Version}' ocl-icd-libopencl1)
        [[ $opencl == *" ${loader%%-*} "* ]] || fail "opencl does not name ocl-icd ${loader%%-*}"
    fi
    mpi=$(field mpi)
    if command -v ompi_info >/dev/null; then
        ompi=$(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p')
        [[ $mpi == "Open MPI v$ompi"* ]] || fail "mpi is not Open MPI v$ompi (ompi_info)"
    fi
    hdf5=$(field hdf5)
    if [ "$hdf5" != "not built in" ]; then
        lib=$(pkg-config --modversion hdf5-serial 2>/dev/null || pkg-config --modversion hdf5)
        [ "$hdf5" = "$lib" ] || fail "hdf5 '$hdf5', but pkg-config says $lib"
    fi
    ;;
report)
    expect_exit 0 "$LBKNN" generate data --points 60 --queries 5 --dim 3
    expect_exit 0 "$LBKNN" run data/job.yaml --quiet --set output.report=r.yaml
    line=$(grep '^build: ' r.yaml) || fail "the report has no build: line"
    # The same fields as --version, each a YAML string.
    printf 'build: {' >want.txt
    sep=""
    for name in commit build_type compiler opencl mpi hdf5; do
        printf '%s%s: "%s"' "$sep" "$name" "$(field "$name")" >>want.txt
        sep=", "
    done
    echo "}" >>want.txt
    [ "$line" = "$(cat want.txt)" ] || { echo "$line"; cat want.txt; fail "the report's build line differs"; }
    grep -qx "lbknn_version: \"$(head -n 1 version.txt | cut -d' ' -f2)\"" r.yaml ||
        fail "the report's lbknn_version differs"
    ;;
python)
    out=$(env -u LBKNN_LIBRARY PYTHONPATH="$PYPATH" "$PYTHON" -c '
import lbknn
info = lbknn.build_info()
print("lbknn", info["version"])
for name in ("commit", "build_type", "compiler", "opencl", "mpi", "hdf5"):
    print(f"{name}: {info[name]}")
assert info["version"] == lbknn.__version__ == lbknn.library_version(), info
') || fail "lbknn.build_info() failed"
    [ "$out" = "$(cat version.txt)" ] || { echo "$out"; fail "build_info() differs from --version"; }
    ;;
*)
    fail "unknown scenario $SCENARIO"
    ;;
esac
echo "PASS version.$SCENARIO"
