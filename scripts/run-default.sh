#!/usr/bin/env bash
# Install the dependencies, build, and run lbknn's built-in default job
# (seeded synthetic Gaussian blobs; no input files). Extra arguments go to
# `lbknn run`, e.g. --set knn.k=10. Works from any directory.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lbk_install $LBK_BUILD_PACKAGES
lbk_build
"$LBK_BUILD/lbknn" devices
exec "$LBK_BUILD/lbknn" run --progress "$@"
