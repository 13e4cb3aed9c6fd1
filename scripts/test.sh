#!/usr/bin/env bash
# Install the dependencies (including SLURM and munge for the job-script test,
# iproute2 for the multi-host test cluster of tests/multihost,
# scikit-learn for the check of the votes against its predict_proba and the
# Python package's tests, with mpi4py and pandas for their MPI and pandas
# cases, Oclgrind for the kernel checks, Valgrind for api.threads.helgrind,
# clang-format for the style check,
# python3-venv and python3-pip for pip.install, man-db for docs.man, Lmod
# for install.modulefile), build,
# and run the whole CTest suite
# except tests labelled `slow`, then its sanitize subset on a build with
# AddressSanitizer and UBSan (scripts/test-sanitized.sh). `scripts/test.sh
# -L full` runs every test, the slow ones (the full tier) too, then the
# sanitized pass. Other arguments go to ctest, for the plain build only. A machine where the tests find no OpenCL device fails: the
# device tests do not skip here.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lbk_install $LBK_BUILD_PACKAGES gzip slurmctld slurmd slurm-client munge python3-sklearn \
    python3-mpi4py python3-pandas python3-h5py oclgrind valgrind clang-format iproute2 \
    python3-venv python3-pip man-db lmod
lbk_build
lbk_mpi_env
lbk_pocl_cache_env
export LBK_TEST_REQUIRE_OPENCL=1
# -L full: the full tier, every test (the slow ones too: the full matrices,
# many ranks, long runs and the mutation check), then the sanitized pass;
# other arguments then go to the plain run's ctest too.
plain=(-LE slow)
rest=()
while [ $# -gt 0 ]; do
    if [ "$1" = -L ] && [ "${2:-}" = full ]; then
        plain=()
        shift 2
    else
        rest+=("$1")
        shift
    fi
done
if [ ${#plain[@]} -gt 0 ] && [ ${#rest[@]} -gt 0 ]; then
    cd "$LBK_BUILD"
    exec ctest --output-on-failure "${rest[@]}"
fi
status=0
(cd "$LBK_BUILD" && ctest --output-on-failure "${plain[@]}" -j"$(nproc)" "${rest[@]}") || status=1
bash "$LBK_ROOT/scripts/test-sanitized.sh" || status=1
exit "$status"
