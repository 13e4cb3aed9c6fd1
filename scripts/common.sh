# Shared by the scripts in this directory: install what is missing (Debian
# packages, via apt-get; as root or with sudo) and build into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail

LBK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LBK_BUILD=${LBK_BUILD:-$LBK_ROOT/build}

LBK_BUILD_PACKAGES="build-essential cmake pkg-config libopenmpi-dev openmpi-bin
  ocl-icd-opencl-dev opencl-headers ocl-icd-libopencl1 pocl-opencl-icd clinfo libyaml-dev
  zlib1g-dev libdeflate-dev libhdf5-dev"

lbk_sudo() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# lbk_install PKG...: install the packages that are not installed yet.
lbk_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "lbknn: installing ${missing[*]}" >&2
    lbk_sudo apt-get update -qq
    lbk_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

lbk_build() {
    cmake -S "$LBK_ROOT" -B "$LBK_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$LBK_BUILD" -j"$(nproc)"
}

# Open MPI refuses root and oversubscription unless told; these are for the
# project's own scripts and tests, never set by the program itself.
lbk_mpi_env() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}

# PoCL's kernel cache where PoCL puts it by default, named outright, so that
# the tests which point XDG_CACHE_HOME at a fresh directory (to start
# lbknn's own cache empty) do not also make PoCL compile every kernel again,
# and the sanitized run finds the kernels the plain one built.
lbk_pocl_cache_env() {
    export POCL_CACHE_DIR=${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pocl/kcache}
}
