# Sourced by the benchmarks that count work instead of timing it
# (work_scaling.sh, many_ranks.sh, model_calibration.sh), after they set
# `root`: LBKNN (default $root/build/lbknn, checked) and GEN (bench_points beside
# it; lbk_require_gen checks it), and Open MPI's settings for running as root with more
# ranks than cores (scripts/common.sh's lbk_mpi_env).
LBKNN=${LBKNN:-$root/build/lbknn}
[ -x "$LBKNN" ] || { echo "no lbknn binary at $LBKNN; set LBKNN" >&2; exit 1; }
GEN=$(dirname "$LBKNN")/bench/bench_points
# lbk_require_gen: for the scripts that make their data with bench_points.
lbk_require_gen() {
    [ -x "$GEN" ] || { echo "no bench_points beside $LBKNN" >&2; exit 1; }
}
# shellcheck source=../scripts/common.sh
. "$root/scripts/common.sh"
lbk_mpi_env
