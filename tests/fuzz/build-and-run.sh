#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a while.
#
#   tests/fuzz/build-and-run.sh [SECONDS-PER-TARGET] [TARGET...]
#
# Targets: job csv binary (default: all). Needs clang and its fuzzer runtime
# (Debian: clang-14 libclang-rt-14-dev). Builds into build-fuzz/ at the
# repository root; the seed corpus is copied there so the run does not touch
# tests/fuzz/corpus. Crashers land in build-fuzz/artifacts/: copy real ones
# into tests/fuzz/crashers/TARGET/ so the gcc replay test keeps them.
# Not part of CTest: the replay tests (fuzz_replay_*) are.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/build-fuzz
seconds=${1:-300}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(job csv binary)

cc=${CC:-clang}
command -v "$cc" >/dev/null || { echo "build-and-run.sh: $cc not found" >&2; exit 2; }

mkdir -p "$out/obj" "$out/artifacts"
flags=(-g -O1 -std=c11 -Wall -Wextra -Wpedantic -fno-omit-frame-pointer
       -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -D_POSIX_C_SOURCE=200809L '-DLBK_VERSION="fuzz"' -I"$here")
# The layers the harnesses exercise (see src/CMakeLists.txt), every file of each.
layers=(core job io)

objs=()
for layer in "${layers[@]}"; do
  flags+=(-I"$root/src/$layer")
done
for layer in "${layers[@]}"; do
  for src in "$root/src/$layer"/*.c; do
    obj=$out/obj/$layer-$(basename "${src%.c}").o
    "$cc" "${flags[@]}" -c "$src" -o "$obj"
    objs+=("$obj")
  done
done
for src in fuzz_util.c fuzz_check.c; do
  "$cc" "${flags[@]}" -c "$here/$src" -o "$out/obj/${src%.c}.o"
  objs+=("$out/obj/${src%.c}.o")
done

for t in "${targets[@]}"; do
  "$cc" "${flags[@]}" -fsanitize=fuzzer "$here/fuzz_$t.c" "${objs[@]}" \
    -lyaml -lz -lm -o "$out/fuzz_$t"
done

status=0
for t in "${targets[@]}"; do
  corpus=$out/corpus-$t
  mkdir -p "$corpus"
  cp -n "$here/corpus/$t"/* "$corpus"/ 2>/dev/null || true
  echo "== fuzz_$t for ${seconds}s (corpus $corpus)"
  # close_fd_mask=2: the readers log every rejected input; sanitizer reports
  # still reach the terminal. The memory limits turn a header that asks for
  # gigabytes into a finding instead of a swapping machine.
  UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "$out/fuzz_$t" "$corpus" -max_total_time="$seconds" -close_fd_mask=2 \
      -rss_limit_mb=3072 -malloc_limit_mb=1024 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$out/artifacts/$t-" || status=$?
done
exit $status
