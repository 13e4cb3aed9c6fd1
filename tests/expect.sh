# Assertions shared by the shell-driven end-to-end tests (sourced, not run).
# Each scenario works in its own directory; out.txt/err.txt hold the last
# command's output.
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_exit CODE CMD...: run CMD, keep its stdout/stderr, check the exit code
expect_exit() {
    local want=$1; shift
    "$@" >out.txt 2>err.txt
    local got=$?
    [ "$got" -eq "$want" ] || { cat out.txt err.txt >&2; fail "exit $got, expected $want: $*"; }
}
expect_err() { grep -qF -- "$1" err.txt || { cat err.txt >&2; fail "stderr lacks '$1'"; }; }
expect_out() { grep -qF -- "$1" out.txt || { cat out.txt >&2; fail "stdout lacks '$1'"; }; }
one_line() { [ "$(wc -l < err.txt)" -eq 1 ] || { cat err.txt >&2; fail "expected one error line"; }; }
# No result file may be left in out/ after a failed run.
no_outputs() {
    local left
    left=$(ls out/ 2>/dev/null)
    [ -z "$left" ] || fail "output files left behind: $left"
}
