#!/usr/bin/env bash
# check_format.sh ROOT [FILE...]: every C source, header and kernel under
# ROOT's src/ tests/ bench/ kernels/ (or the FILEs given) is as
# clang-format 14 writes it with ROOT/.clang-format. Lists each file that is
# not, with the command that fixes it; exit 1 then, 77 without clang-format 14.
set -uo pipefail
root=$1
shift
version=$(clang-format --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$version" != 14 ]; then
    echo "format.check: needs clang-format 14 (Debian 12), found: ${version:-none}"
    exit 77
fi
cd "$root" || exit 1
if [ $# -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(find src tests bench kernels -type f \( -name '*.c' -o -name '*.h' \
        -o -name '*.cl' \) -not -path '*/fixtures/*' | sort)
fi
bad=0
for f in "${files[@]}"; do
    if ! clang-format --style=file:"$root/.clang-format" "$f" | cmp -s - "$f"; then
        echo "$f: not in the house style (fix: clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
echo "format.check: ${#files[@]} files, $bad not formatted"
[ "$bad" -eq 0 ]
