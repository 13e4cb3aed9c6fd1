#!/usr/bin/env bash
# Install the dependencies (including SLURM and munge for the job-script test,
# scikit-learn for the check of the votes against its predict_proba, and
# Oclgrind for the kernel checks), build, and run the whole CTest suite
# except tests labelled `slow` (run those with: scripts/test.sh -L slow).
# Extra arguments go to ctest.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lbk_install $LBK_BUILD_PACKAGES gzip slurmctld slurmd slurm-client munge python3-sklearn oclgrind
lbk_build
lbk_mpi_env
cd "$LBK_BUILD"
if [ $# -gt 0 ]; then
    exec ctest --output-on-failure "$@"
fi
exec ctest --output-on-failure -LE slow -j1
