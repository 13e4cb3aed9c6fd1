#!/usr/bin/env bash
# The mutation check (issue 20): the suite must catch each bug of
# tests/mutation/mutants.txt. In a scratch copy of the source tree, built
# once (Release), each mutant is applied alone, the tree rebuilt and the
# tests of its catch regex run; the mutant is caught when at least one of
# them fails. First the baseline: with no mutant, every test of every regex
# must pass (a test that already fails, or skips, catches nothing).
#
#   bash tests/mutation/run_mutants.sh [--only NAME]... [--keep]
#        [--source DIR] [--scratch DIR] [--list FILE]
#
#   --only NAME    this mutant only (repeatable; NAME,NAME also works)
#   --keep         keep the scratch copy (build, logs) and say where
#   --source DIR   the tree to copy (default: the repository holding this
#                  script); its build directories and .git are not copied
#   --scratch DIR  the scratch directory (created; default: a new one
#                  under ${TMPDIR:-/tmp})
#   --list FILE    the mutant list (default: mutants.txt beside this script)
#
# Exit status 0 only when the baseline passed and every mutant built and was
# caught; 1 when one survived, did not build or the baseline failed; 2 on a
# bad list or usage. Per-mutant build and test logs are in the scratch
# directory's logs/ (see --keep).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
source_dir=$(cd "$here/../.." && pwd)
list=$here/mutants.txt
scratch=
keep=0
only=()

usage() { sed -n '2,22s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --only) [ $# -ge 2 ] || usage; IFS=, read -r -a names <<<"$2"; only+=("${names[@]}"); shift 2 ;;
        --keep) keep=1; shift ;;
        --source) [ $# -ge 2 ] || usage; source_dir=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        --scratch) [ $# -ge 2 ] || usage; scratch=$2; shift 2 ;;
        --list) [ $# -ge 2 ] || usage; list=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") || exit 2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "run_mutants.sh: unknown argument '$1'" >&2; usage ;;
    esac
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
start=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - start)) "$*"; }

# The list, and which mutants run.
table=$("$py" "$here/mutants.py" list "$list") || exit 2
declare -a m_name m_file m_catch
while IFS=$'\t' read -r n f c; do
    m_name+=("$n"); m_file+=("$f"); m_catch+=("$c")
done <<<"$table"
selected=()
if [ ${#only[@]} -eq 0 ]; then
    selected=("${!m_name[@]}")
else
    for want in "${only[@]}"; do
        found=
        for i in "${!m_name[@]}"; do [ "${m_name[$i]}" = "$want" ] && found=$i; done
        [ -n "$found" ] || { echo "run_mutants.sh: no mutant '$want' in $list" >&2; exit 2; }
        selected+=("$found")
    done
fi
# Every snippet must still apply to the tree, before anything is built.
for i in "${selected[@]}"; do
    "$py" "$here/mutants.py" check "$list" "$source_dir" "${m_name[$i]}" || exit 2
done

# The scratch copy: the tracked and untracked-but-not-ignored files of a git
# tree, else everything but build*/ and .git.
if [ -z "$scratch" ]; then
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/lbknn-mutation.XXXXXX") || exit 1
else
    mkdir -p "$scratch" || exit 1
    [ -z "$(ls -A "$scratch")" ] || { echo "run_mutants.sh: $scratch is not empty" >&2; exit 2; }
fi
scratch=$(cd "$scratch" && pwd)
cleanup() {
    if [ "$keep" = 1 ]; then echo "scratch kept: $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
src=$scratch/src build=$scratch/build logs=$scratch/logs orig=$scratch/orig
mkdir -p "$src" "$logs" "$orig"
say "copying $source_dir to $src"
if git -C "$source_dir" rev-parse --show-toplevel >/dev/null 2>&1 &&
   [ "$(git -C "$source_dir" rev-parse --show-toplevel)" = "$source_dir" ]; then
    git -C "$source_dir" ls-files -z -co --exclude-standard |
        while IFS= read -r -d '' f; do [ -f "$source_dir/$f" ] && printf '%s\0' "$f"; done |
        tar -C "$source_dir" --null -T - -cf - | tar -C "$src" -xf - || exit 1
else
    tar -C "$source_dir" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$src" -xf - || exit 1
fi
# The list applies to the copy (the tree may have changed since the check).
for i in "${selected[@]}"; do
    "$py" "$here/mutants.py" check "$list" "$src" "${m_name[$i]}" || exit 2
done

build_tree() { # LOG
    cmake --build "$build" -j2 >"$1" 2>&1
}
say "configuring and building (Release, -j2)"
if ! cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$logs/configure.log" 2>&1 ||
   ! build_tree "$logs/build.log"; then
    tail -n 30 "$logs/configure.log" "$logs/build.log" 2>/dev/null
    echo "run_mutants.sh: the unmutated tree does not build" >&2
    exit 1
fi

# "number<TAB>name" of the tests a regex names (never the slow ones, never
# this check itself). CMake's regexes allow few groups, so the union of the
# regexes is run as a list of test numbers, not as one regex.
test_list() {
    ctest --test-dir "$build" -N -R "$1" -E '^mutation\.' -LE slow |
        sed -n 's/^ *Test *#\([0-9]*\): \(.*\)$/\1\t\2/p'
}

# run_tests NAME: runs the tests of $logs/NAME.tests (test_list lines);
# leaves "verdict<TAB>test" lines in $logs/NAME.results, or fails when they
# are not exactly those tests. (No other filter goes with -I: with one,
# ctest counts the numbers within what it leaves.)
run_tests() {
    local xml=$logs/$1.junit.xml
    rm -f "$xml"
    ctest --test-dir "$build" -I "0,0,0,$(cut -f1 "$logs/$1.tests" | paste -sd,)" -j2 \
        --output-junit "$xml" >"$logs/$1.ctest.log" 2>&1
    : >"$logs/$1.results"
    [ -f "$xml" ] && "$py" "$here/mutants.py" junit "$xml" >"$logs/$1.results"
    [ "$(cut -f2 "$logs/$1.results" | sort)" = "$(cut -f2 "$logs/$1.tests" | sort)" ]
}

# Each regex must name tests (a renamed test would leave it catching nothing).
for i in "${selected[@]}"; do
    test_list "${m_catch[$i]}" >"$logs/${m_name[$i]}.tests"
    if [ ! -s "$logs/${m_name[$i]}.tests" ]; then
        echo "run_mutants.sh: mutant '${m_name[$i]}': catch regex '${m_catch[$i]}' names no test" \
             "(or is not a regex CMake can compile: at most 9 groups)" >&2
        exit 2
    fi
    cat "$logs/${m_name[$i]}.tests"
done | sort -n -u >"$logs/baseline.tests"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 2

say "baseline: the tests of every catch regex, no mutant"
if ! run_tests baseline || grep -qv '^pass' "$logs/baseline.results"; then
    echo "baseline FAILED: with no mutant these tests do not all pass, so no mutant can be judged:"
    grep -v '^pass' "$logs/baseline.results" | sed 's/^/  /' | tr '\t' ' '
    echo "  ($(wc -l <"$logs/baseline.results") results for $(wc -l <"$logs/baseline.tests") tests;" \
         "see $logs/baseline.ctest.log)"
    tail -n 20 "$logs/baseline.ctest.log"
    exit 1
fi
baseline_total=$(wc -l <"$logs/baseline.results")
say "baseline: all $baseline_total tests pass"

declare -a r_verdict r_detail r_secs
for i in "${selected[@]}"; do
    name=${m_name[$i]} file=${m_file[$i]}
    t0=$SECONDS
    say "mutant $name: $file"
    mkdir -p "$orig/$(dirname "$file")"
    cat "$src/$file" >"$orig/$file"
    "$py" "$here/mutants.py" apply "$list" "$src" "$name" || exit 2
    touch "$src/$file"
    if ! build_tree "$logs/$name.build.log"; then
        verdict=BUILD-ERROR
        detail="does not compile (a list error): $(grep -m1 -E 'error' "$logs/$name.build.log")"
    else
        run_tests "$name"
        ran=$?
        total=$(wc -l <"$logs/$name.results")
        failed=$(awk -F'\t' '$1 == "fail" {print $2}' "$logs/$name.results")
        nfail=$(printf '%s' "$failed" | grep -c .)
        if [ "$ran" -ne 0 ]; then
            verdict=ERROR
            detail="results for $total of $(wc -l <"$logs/$name.tests") tests (see $name.ctest.log)"
        elif [ "$nfail" -gt 0 ]; then
            verdict=caught
            detail="$nfail/$total failed: $(printf '%s\n' "$failed" | head -n 4 | paste -sd' ')"
            [ "$nfail" -gt 4 ] && detail+=" ..."
        else
            verdict=SURVIVED detail="all $total tests passed"
        fi
    fi
    # Restore with a plain write and a new mtime: make must rebuild what the
    # mutant's build left behind.
    cat "$orig/$file" >"$src/$file"
    touch "$src/$file"
    r_verdict[$i]=$verdict r_detail[$i]=$detail r_secs[$i]=$((SECONDS - t0))
    say "mutant $name: $verdict ($detail)"
done

status=0
echo
printf '%-24s %-11s %6s  %s\n' mutant result secs "failing tests (first few)"
printf '%-24s %-11s %6s  %s\n' ------ ------ ---- -------------------------
for i in "${selected[@]}"; do
    printf '%-24s %-11s %6s  %s\n' "${m_name[$i]}" "${r_verdict[$i]}" "${r_secs[$i]}" "${r_detail[$i]}"
    [ "${r_verdict[$i]}" = caught ] || status=1
done
echo
caught=0
for i in "${selected[@]}"; do [ "${r_verdict[$i]}" = caught ] && caught=$((caught + 1)); done
echo "$caught of ${#selected[@]} mutants caught; baseline $baseline_total tests passed;" \
     "total $((SECONDS - start)) s"
exit $status
