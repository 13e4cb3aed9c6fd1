#!/usr/bin/env bash
# The README's C example, as a reader runs it: the program block, the
# command block and the output block after their <!-- example: c ... -->
# markers in README.md. The command runs, as written, in a scratch
# directory that looks like the repository's root after the normal build
# (src/api is the source tree's, build this build tree), and the program's
# stdout must be the output block. The program must also compile without a
# warning under the project's flags.
# Usage: readme_example.sh README SOURCE_DIR BUILD_DIR
set -euo pipefail
readme=$1 source_dir=$2 build_dir=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The fenced block right after the line "<!-- example: NAME -->" (blank
# lines between them allowed); fails unless there is exactly one marker.
block() {
    local marker="<!-- example: $1 -->" count
    count=$(grep -cxF -- "$marker" "$readme" || true)
    if [[ $count != 1 ]]; then
        echo "FAIL: $readme has $count lines '$marker' (want 1)" >&2
        return 1
    fi
    awk -v marker="$marker" '
        $0 == marker { state = 1; next }
        state == 1 && /^```/ { state = 2; next }
        state == 1 && /^[[:space:]]*$/ { next }
        state == 1 { exit 1 }
        state == 2 && /^```[[:space:]]*$/ { exit }
        state == 2 { print }' "$readme" || {
        echo "FAIL: no fenced block right after '$marker' in $readme" >&2
        return 1
    }
}

block c >"$dir/example.c"
block "c command" >"$dir/command.sh"
block "c output" >"$dir/expected.txt"
for f in example.c command.sh expected.txt; do
    if [[ ! -s $dir/$f ]]; then
        echo "FAIL: the README's block for $f is missing or empty" >&2
        exit 1
    fi
done

mkdir -p "$dir/src"
ln -s "$source_dir/src/api" "$dir/src/api"
ln -s "$build_dir" "$dir/build"

cd "$dir"
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -Isrc/api example.c
echo "+ $(cat command.sh)"
bash -euo pipefail command.sh >actual.txt
if ! diff -u expected.txt actual.txt; then
    echo "FAIL: the example's output differs from the README's (- README, + this run)" >&2
    exit 1
fi
echo "PASS: the README's example prints what the README says"
