#!/usr/bin/env bash
# Runs the GPU check bundle (scripts/gpu-bundle.sh) with --cpu-dry-run where
# the libraries it brings are absent, as on the GPU machine: the files of
# Open MPI (libraries, components, mpirun, settings, help texts), PMIx, hwloc,
# libevent, munge, libyaml, the OpenCL ICD loader, zlib, libdeflate and libudev are
# removed from view, and so are the ICD files in /etc/OpenCL/vendors. The
# check must then find PoCL's driver library by itself and hand it to the
# bundle's loader through the bundle's vendors/ folder: the same search and
# the same path it takes for NVIDIA's libnvidia-opencl.so.1 on the GPU.
#
# Why a private mount namespace (unshare -m) and not a debootstrap root: a
# root needs Debian's mirror and minutes to make, and PoCL with LLVM
# (~150 MB) inside it to have any OpenCL driver at all; the namespace needs
# neither, is made in well under a second, hides exactly the files the
# packages own (dpkg's lists), and only for this process tree. What stays
# visible is glibc and the rest of Debian; the GPU machine's glibc is newer,
# and runs binaries linked against Debian 12's 2.36.
# How: /usr/lib/x86_64-linux-gnu (/lib is a link to /usr/lib) and /usr/bin are
# replaced by folders of links to all they hold except the hidden files;
# /etc/openmpi, /usr/share/openmpi and /etc/OpenCL/vendors by empty folders.
# Skips (77) where no mount namespace can be made or PoCL is missing.
#
# usage: without_packages.sh BUNDLE OUTDIR [check.sh arguments...]
set -u
LBK_HIDDEN_PACKAGES="libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15
  libhwloc-plugins libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libmunge2
  libyaml-0-2 ocl-icd-libopencl1 zlib1g libdeflate0 libudev1"
LBK_MULTIARCH=x86_64-linux-gnu

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# Names to remove from the link folders: top-level entries of the library
# folder and of /usr/bin that the packages own (a package's folder goes whole).
lbk_hidden_names() {
    local where=$1 p
    for p in $LBK_HIDDEN_PACKAGES; do
        dpkg-query -L "$p" 2>/dev/null
    done | sed -n -E "s#^(/usr)?$where/([^/]+).*#\\2#p" | sort -u
}

# Inside the namespace: hide, prove the files are gone, run the check.
lbk_inside() {
    local scratch=$1 bundle=$2 out=$3 d i=0 name target
    shift 3
    mount -t tmpfs lbk-hide "$scratch" || fail "tmpfs on $scratch"
    mkdir "$scratch/empty"
    for d in /usr/lib/$LBK_MULTIARCH /usr/bin; do
        i=$((i + 1))
        mkdir "$scratch/real$i" "$scratch/links$i"
        mount --bind "$d" "$scratch/real$i" || fail "bind $d"
        (shopt -s dotglob; ln -s -t "$scratch/links$i" "$scratch/real$i"/*) || fail "links for $d"
        # Relative links that leave the folder (../llvm-15/...) must start from
        # the folder's own path, not from the bind mount's.
        find "$d" -maxdepth 1 -mindepth 1 -type l -lname '*/*' ! -lname '/*' -printf '%f\t%l\n' |
            while IFS=$'\t' read -r name target; do
                ln -sfn "$d/$target" "$scratch/links$i/$name"
            done
        lbk_hidden_names "${d#/usr}" | while read -r name; do
            rm -f "$scratch/links$i/$name"
        done
        [ "$d" = /usr/bin ] && rm -f "$scratch/links$i"/{mpirun,mpiexec,orterun,orted,ompi_info}*
    done
    # One mount each; from here on, programs load through the links.
    mount --bind "$scratch/links1" /usr/lib/$LBK_MULTIARCH || fail "hide libraries"
    mount --bind "$scratch/links2" /usr/bin || fail "hide programs"
    for d in /etc/openmpi /usr/share/openmpi /etc/OpenCL/vendors; do
        [ -d "$d" ] && { mount --bind "$scratch/empty" "$d" || fail "hide $d"; }
    done
    for name in libmpi.so.40 libopen-pal.so.40 libpmix.so.2 libhwloc.so.15 \
        libevent_core-2.1.so.7 libyaml-0.so.2 libOpenCL.so.1 libz.so.1 libdeflate.so.0 libudev.so.1 \
        openmpi; do
        [ ! -e "/usr/lib/$LBK_MULTIARCH/$name" ] && [ ! -e "/lib/$LBK_MULTIARCH/$name" ] ||
            fail "$name is still visible"
    done
    ! command -v mpirun >/dev/null && ! command -v orterun >/dev/null || fail "mpirun still on PATH"
    [ -z "$(ls -A /etc/OpenCL/vendors 2>/dev/null)" ] || fail "ICD files still visible"
    echo "hidden: $(lbk_hidden_names "/lib/$LBK_MULTIARCH" | wc -l) library entries and" \
         "$(lbk_hidden_names /bin | wc -l) programs of: $(echo $LBK_HIDDEN_PACKAGES)"
    echo "absent here: libmpi.so.40 libyaml-0.so.2 libOpenCL.so.1 libhwloc.so.15 libpmix.so.2" \
         "libz.so.1 libdeflate.so.0 mpirun /etc/OpenCL/vendors/*"
    OUT=$out bash "$bundle/check.sh" --cpu-dry-run "$@"
}

if [ "${1:-}" = --inside ]; then
    shift
    lbk_inside "$@"
    exit
fi

bundle=$(cd "$1" && pwd) || exit 1
out=$2
shift 2
[ "$(id -u)" -eq 0 ] || skip "needs root for a mount namespace"
command -v unshare >/dev/null && command -v dpkg-query >/dev/null || skip "no unshare or dpkg"
unshare -m --propagation private true 2>/dev/null || skip "no mount namespace here"
[ -e "/usr/lib/$LBK_MULTIARCH/libpocl.so.2" ] || skip "PoCL (pocl-opencl-icd) not installed"
[ -f "$bundle/check.sh" ] || fail "no bundle in $bundle"

rm -rf "$out" && mkdir -p "$out"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/lbk-hide.XXXXXX") || exit 1
trap 'rmdir "$scratch"' EXIT  # only ever an empty mount point out here
start=$SECONDS
unshare -m --propagation private bash "$0" --inside "$scratch" "$bundle" "$out" "$@"
rc=$?
echo "without_packages: check.sh exit $rc after $((SECONDS - start)) s"
[ $rc -eq 0 ] || fail "the check failed without the packages (exit $rc)"

# The bundle's own libraries and the vendors folder did the work.
log=$out/check.log
for lib in libmpi.so.40 libyaml-0.so.2 libOpenCL.so.1 libhwloc.so.15 libdeflate.so.0; do
    grep -qF "  $lib => $bundle/lib/$lib" "$log" || fail "lbknn did not load $lib from the bundle"
done
grep -qE "^OpenCL driver: /.*/libpocl\.so\.2.* \(via $bundle/vendors/pocl\.icd\)$" "$log" ||
    fail "PoCL was not supplied through the bundle's vendors folder"
grep -q '^mpirun: 2 ranks start' "$log" || fail "mpirun from the bundle did not start 2 ranks"
grep -qE '^exactness: [1-9][0-9]* passed, 0 failed, 0 skipped, 0 not run' "$log" ||
    fail "the exactness part did not pass"
echo "PASS: the bundle ran without the packages"
