#!/bin/bash
# task search on Fashion-MNIST in the ann-benchmarks HDF5 layout against its
# float64 ground truth (bench/hdf5_fashion.py): the fraction of queries whose
# K ids and K distances equal the file's. Run from the repository root after
# building:  bash bench/hdf5.sh [BUILD_DIR] [K (100)]
set -euo pipefail
. "$(dirname "$0")/peers.sh"
lbk_install dataset-fashion-mnist python3-h5py python3-yaml
lbk_pocl_cache_env
build=$(cd "${1:-build}" && pwd)
echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
lbk_peers_describe
/usr/bin/python3 "$(dirname "$0")/hdf5_fashion.py" "$build/lbknn" bench/out/hdf5 "${2:-100}"
