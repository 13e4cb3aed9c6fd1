#!/usr/bin/env bash
# release.files: the version is written in one place (lbknn.h's three
# macros) and everything else agrees with it or reads it: CHANGELOG.md's
# newest release heading names it, in Keep a Changelog's form, newest first;
# CMakeLists.txt, pyproject.toml and CITATION.cff write no version of their
# own; every version the README and docs/ quote is this one. The licence is
# BSD-3-Clause wherever it is named.
# usage: release.sh SOURCE
set -euo pipefail
SOURCE=$1
cd "$SOURCE"
fail() { echo "FAIL: $*" >&2; exit 1; }

version=""
for part in MAJOR MINOR PATCH; do
    n=$(sed -n "s/^#define LBKNN_VERSION_$part \([0-9][0-9]*\)$/\1/p" src/api/lbknn.h)
    [ -n "$n" ] || fail "src/api/lbknn.h: no LBKNN_VERSION_$part"
    version+=$n.
done
version=${version%.}
major=${version%%.*}
echo "version $version (src/api/lbknn.h)"

# CHANGELOG.md: [Unreleased] first, then releases newest first, each with a
# date, the newest being this version, each with its link line at the end.
[ "$(grep -m1 '^## ' CHANGELOG.md)" = "## [Unreleased]" ] || fail "CHANGELOG.md: [Unreleased] is not first"
mapfile -t releases < <(sed -n 's/^## \[\([0-9][0-9.]*\)\] - [0-9]\{4\}-[0-9]\{2\}-[0-9]\{2\}$/\1/p' CHANGELOG.md)
[ ${#releases[@]} -ge 1 ] || fail "CHANGELOG.md: no '## [X.Y.Z] - YYYY-MM-DD' heading"
[ "${releases[0]}" = "$version" ] ||
    fail "CHANGELOG.md's newest release is ${releases[0]}, lbknn.h says $version"
other=$(grep '^## ' CHANGELOG.md | grep -v -e '^## \[Unreleased\]$' \
    -e '^## \[[0-9][0-9.]*\] - [0-9]\{4\}-[0-9]\{2\}-[0-9]\{2\}$' || true)
[ -z "$other" ] || fail "CHANGELOG.md: headings not in Keep a Changelog's form: $other"
sorted=$(printf '%s\n' "${releases[@]}" | sort -t. -k1,1nr -k2,2nr -k3,3nr)
[ "$sorted" = "$(printf '%s\n' "${releases[@]}")" ] || fail "CHANGELOG.md: releases not newest first"
for v in Unreleased "${releases[@]}"; do
    grep -q "^\[$v\]: " CHANGELOG.md || fail "CHANGELOG.md: no link line [$v]:"
done

# No second place for the version.
grep -q '^project(lbknn VERSION ${LBK_HEADER_VERSION}' CMakeLists.txt ||
    fail "CMakeLists.txt's project() does not take the header's version"
grep -q '^dynamic = \["version"\]' pyproject.toml || fail "pyproject.toml: version is not dynamic"
if grep -q '^version *=' pyproject.toml; then fail "pyproject.toml writes a version"; fi
if grep -q '^version:' CITATION.cff; then fail "CITATION.cff writes a version"; fi
# Each version the README and the pages of docs/ it links quote ("lbknn
# 0.2.0", "liblbknn.so.0.2.0", "find_package(lbknn 0.2") is this one.
while IFS=: read -r file quoted; do
    [[ $version == "$quoted" || $version == "$quoted".* ]] ||
        fail "$file quotes version $quoted, lbknn.h says $version"
done < <(grep -o -H -e 'lbknn [0-9]\+\.[0-9]\+\(\.[0-9]\+\)\?' -e 'liblbknn\.so\.[0-9.]*[0-9]' \
             README.md docs/*.md |
    sed -e 's/:lbknn /:/' -e 's/:liblbknn\.so\./:/' | sort -u)
grep -q "liblbknn.so.$major\b" README.md || fail "README.md does not name the SONAME liblbknn.so.$major"
grep -q "liblbknn.so.$major\b" docs/install.md ||
    fail "docs/install.md does not name the SONAME liblbknn.so.$major"

# The licence, wherever it is named.
head -1 LICENSE | grep -qx "BSD 3-Clause License" || fail "LICENSE is not the BSD 3-Clause text"
grep -qx "Copyright (c) 2026, the lbknn authors" LICENSE || fail "LICENSE: copyright line"
grep -qx "license: BSD-3-Clause" CITATION.cff || fail "CITATION.cff: licence"
grep -q '^license = { text = "BSD-3-Clause" }' pyproject.toml || fail "pyproject.toml: licence"
grep -qx "License: BSD-3-Clause" cmake/lbknn.pc.in || fail "lbknn.pc: licence"
grep -q "set(LBKNN_LICENSE BSD-3-Clause)" cmake/lbknnConfig.cmake.in || fail "CMake package: licence"
grep -q "BSD-3-Clause" README.md || fail "README.md names no licence"
echo "PASS release.files"
