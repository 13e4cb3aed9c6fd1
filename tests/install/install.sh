#!/usr/bin/env bash
# What `cmake --install` lays out for a user of the library, one CTest test
# per scenario; each installs the build into a fresh prefix of its own.
# usage: install.sh SCENARIO BUILD WORK SOURCE LIBDIR INCLUDEDIR [SANITIZE]
#   LIBDIR, INCLUDEDIR: CMAKE_INSTALL_LIBDIR and _INCLUDEDIR, relative to the
#   prefix; SANITIZE: the build's LBK_SANITIZE, which the consumer program
#   is then built with too (a sanitized library needs a sanitized program).
# The expected version, SONAME and exported names come from the installed
# lbknn.h, the interface's own statement of them, not from the build.
set -u
SCENARIO=$1 BUILD=$2 WORK=$3 SOURCE=$4 LIBDIR=$5 INCLUDEDIR=$6 SANITIZE=${7:-}
source "$SOURCE/tests/expect.sh"
CONSUMER=$SOURCE/tests/install/consumer
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
PREFIX=$WORK/prefix
SANFLAGS=""
[ -n "$SANITIZE" ] && SANFLAGS="-fsanitize=$SANITIZE -fno-sanitize-recover=all -fno-omit-frame-pointer"

# install_to PREFIX [cmake --install args]: the build into PREFIX; the log in install.log.
install_to() {
    local prefix=$1
    shift
    cmake --install "$BUILD" --prefix "$prefix" "$@" >install.log 2>&1 ||
        { cat install.log >&2; fail "cmake --install --prefix $prefix $*"; }
}
# header_version PREFIX: MAJOR.MINOR.PATCH as the installed lbknn.h declares it.
header_version() {
    local h=$1/$INCLUDEDIR/lbknn.h part v=""
    [ -f "$h" ] || fail "no $h"
    for part in MAJOR MINOR PATCH; do
        v+=$(sed -n "s/^#define LBKNN_VERSION_$part \([0-9][0-9]*\)$/\1/p" "$h").
    done
    v=${v%.}
    [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no version in $h: '$v'"
    echo "$v"
}
# run_consumer PROGRAM: runs it against the prefix's library (and that one:
# ldd must resolve liblbknn there, not in the build tree); it prints OK.
run_consumer() {
    local lib
    lib=$(LD_LIBRARY_PATH=$PREFIX/$LIBDIR ldd "$1" | sed -n 's/^[[:space:]]*liblbknn\.so[^ ]* => \([^ ]*\) .*/\1/p')
    [ "$lib" = "$PREFIX/$LIBDIR/liblbknn.so.$MAJOR" ] ||
        fail "$1 loads liblbknn from '${lib:-nowhere}', not $PREFIX/$LIBDIR"
    LD_LIBRARY_PATH=$PREFIX/$LIBDIR expect_exit 0 "$1"
    cat out.txt
    expect_out "OK"
}
# configure_consumer DIR [cmake args]: the consumer's CMake project against the prefix.
configure_consumer() {
    local dir=$1
    shift
    cmake -S "$CONSUMER" -B "$dir" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release \
        ${SANFLAGS:+"-DCMAKE_C_FLAGS=$SANFLAGS"} "$@" >"$dir.log" 2>&1
}
# tree DIR: every path below DIR with its type and link target, one a line.
tree() { (cd "$1" && find . -printf '%y %p %l\n' | LC_ALL=C sort); }

install_to "$PREFIX"
VERSION=$(header_version "$PREFIX") || exit 1
MAJOR=${VERSION%%.*}
LIB=$PREFIX/$LIBDIR

case $SCENARIO in
cmake_package)
    # find_package(lbknn) finds the prefix's package, whose lbknn::lbknn
    # compiles and links the program; it runs.
    configure_consumer consumer-build || { cat consumer-build.log >&2; fail "configure"; }
    grep -qF -- "lbknn $VERSION from $LIB/cmake/lbknn" consumer-build.log ||
        { cat consumer-build.log >&2; fail "find_package did not find lbknn $VERSION in $LIB/cmake/lbknn"; }
    cmake --build consumer-build >build.log 2>&1 || { cat build.log >&2; fail "build"; }
    run_consumer consumer-build/consumer
    ;;
pkg_config)
    # pkg-config lbknn gives -I and -L into the prefix and -llbknn alone,
    # from the prefix's .pc file only (PKG_CONFIG_LIBDIR hides every other
    # one: nothing else is required); the program built with it runs.
    export PKG_CONFIG_PATH=$LIB/pkgconfig
    [ "$(pkg-config --modversion lbknn)" = "$VERSION" ] || fail "pkg-config --modversion lbknn"
    PKG_CONFIG_LIBDIR=$LIB/pkgconfig expect_exit 0 pkg-config --cflags --libs lbknn
    cflags=$(pkg-config --cflags lbknn) libs=$(pkg-config --libs lbknn) || fail "pkg-config lbknn"
    [ "$(realpath -m "$(pkg-config --variable=includedir lbknn)")" = "$PREFIX/$INCLUDEDIR" ] ||
        fail "includedir is not $PREFIX/$INCLUDEDIR: $cflags"
    [ "$(realpath -m "$(pkg-config --variable=libdir lbknn)")" = "$LIB" ] ||
        fail "libdir is not $LIB: $libs"
    others=$(tr ' ' '\n' <<<"$libs" | grep -v -e '^-L' -e '^-llbknn$' -e '^$')
    [ -z "$others" ] || fail "pkg-config --libs lbknn asks for more than -llbknn: $libs"
    read -ra pcflags <<<"$(pkg-config --cflags --libs lbknn)"
    read -ra sanflags <<<"$SANFLAGS"
    cc -std=c11 -Wall -Wextra -Wpedantic -Werror "${sanflags[@]}" "$CONSUMER/main.c" \
        "${pcflags[@]}" -lm -o consumer >build.log 2>&1 ||
        { cat build.log >&2; fail "cc \$(pkg-config --cflags --libs lbknn)"; }
    run_consumer ./consumer
    ;;
soname)
    # liblbknn.so -> .so.MAJOR -> .so.MAJOR.MINOR.PATCH, SONAME .so.MAJOR,
    # and the dynamic symbols it defines are exactly lbknn.h's functions.
    [ -L "$LIB/liblbknn.so" ] || fail "no link $LIB/liblbknn.so"
    [ "$(readlink "$LIB/liblbknn.so")" = "liblbknn.so.$MAJOR" ] ||
        fail "liblbknn.so -> $(readlink "$LIB/liblbknn.so"), not liblbknn.so.$MAJOR"
    [ -L "$LIB/liblbknn.so.$MAJOR" ] || fail "no link $LIB/liblbknn.so.$MAJOR"
    [ "$(readlink "$LIB/liblbknn.so.$MAJOR")" = "liblbknn.so.$VERSION" ] ||
        fail "liblbknn.so.$MAJOR -> $(readlink "$LIB/liblbknn.so.$MAJOR"), not liblbknn.so.$VERSION"
    if [ ! -f "$LIB/liblbknn.so.$VERSION" ] || [ -L "$LIB/liblbknn.so.$VERSION" ]; then
        fail "no file $LIB/liblbknn.so.$VERSION"
    fi
    soname=$(readelf -d "$LIB/liblbknn.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
    [ "$soname" = "liblbknn.so.$MAJOR" ] || fail "SONAME '$soname', not liblbknn.so.$MAJOR"
    nm -D --defined-only "$LIB/liblbknn.so.$VERSION" | awk '{print $NF}' | sed 's/@.*//' |
        LC_ALL=C sort -u >exported.txt
    # Declarations start a line (comments in lbknn.h are indented); the name
    # is the word right before the parameter list.
    sed -n 's/^[A-Za-z_].*[ *]\(lbknn_[a-z_0-9]*\)(.*/\1/p' "$PREFIX/$INCLUDEDIR/lbknn.h" |
        LC_ALL=C sort -u >declared.txt
    [ "$(wc -l <declared.txt)" -ge 10 ] || fail "read only $(wc -l <declared.txt) functions from lbknn.h"
    leaked=$(LC_ALL=C comm -23 exported.txt declared.txt)
    missing=$(LC_ALL=C comm -13 exported.txt declared.txt)
    [ -z "$missing" ] || fail "declared in lbknn.h but not exported: $(tr '\n' ' ' <<<"$missing")"
    [ -z "$leaked" ] ||
        fail "$(wc -w <<<"$leaked") exported symbols lbknn.h does not declare:" \
            "$(head -50 <<<"$leaked" | tr '\n' ' ')"
    echo "$(wc -l <exported.txt) symbols exported, each a function of lbknn.h"
    ;;
destdir)
    # DESTDIR=STAGE stages under STAGE/PREFIX exactly the tree a plain
    # install writes (the same paths, links and bytes: nothing records
    # where it was installed), and writes nothing at PREFIX itself.
    target=$WORK/target
    DESTDIR=$WORK/stage install_to "$target"
    [ ! -e "$target" ] || fail "DESTDIR install wrote into $target itself"
    [ -d "$WORK/stage$target" ] || fail "nothing under $WORK/stage$target"
    tree "$PREFIX" >plain.txt
    tree "$WORK/stage$target" >staged.txt
    diff plain.txt staged.txt || fail "the staged tree differs from the installed one"
    while read -r type path _; do
        [ "$type" = f ] || continue
        cmp -s "$PREFIX/$path" "$WORK/stage$target/$path" || fail "$path differs when staged"
    done <plain.txt
    [ -f "$WORK/stage$target/$LIBDIR/pkgconfig/lbknn.pc" ] || fail "no lbknn.pc staged"
    ;;
twice)
    # A second install into the same prefix changes nothing: every file is
    # up to date, and the tree and its bytes are what the first left.
    tree "$PREFIX" >first.txt
    (cd "$PREFIX" && find . -type f -exec md5sum {} + | LC_ALL=C sort -k2) >first.md5
    install_to "$PREFIX"
    if grep -- '^-- Installing' install.log; then
        fail "the second install wrote files again"
    fi
    grep -q -- '^-- Up-to-date' install.log || { cat install.log >&2; fail "no Up-to-date lines"; }
    tree "$PREFIX" >second.txt
    (cd "$PREFIX" && find . -type f -exec md5sum {} + | LC_ALL=C sort -k2) >second.md5
    if ! diff first.txt second.txt || ! diff first.md5 second.md5; then
        fail "the second install changed the tree"
    fi
    ;;
cmake_version)
    # lbknnConfigVersion.cmake: the same major version and no newer
    # minor/patch than installed is found; a newer one or another major is not.
    minor=$(cut -d. -f2 <<<"$VERSION")
    for want in "$VERSION" "$MAJOR.0"; do
        configure_consumer "ok-$want" -DLBKNN_WANT="$want" ||
            { cat "ok-$want.log" >&2; fail "find_package(lbknn $want) against $VERSION failed"; }
    done
    for want in "$MAJOR.$((minor + 1))" "$((MAJOR + 1)).0"; do
        if configure_consumer "no-$want" -DLBKNN_WANT="$want"; then
            fail "find_package(lbknn $want) accepted $VERSION"
        fi
        # The package was found and turned down for its version alone.
        grep -qF "lbknnConfig.cmake, version: $VERSION" "no-$want.log" ||
            { cat "no-$want.log" >&2; fail "find_package(lbknn $want) failed for another reason"; }
    done
    ;;
modulefile)
    # The installed modulefile under Lmod or Environment Modules (whichever
    # is installed; skipped without either), in a login-like environment of
    # nothing else: module load puts lbknn, its man page, the library and
    # the Python package in reach, and module unload takes them away. (Not
    # the Python package of a sanitized build: the interpreter cannot load a
    # library built with ASan unless the runtime is preloaded into it.)
    init=""
    for f in /usr/share/lmod/lmod/init/bash /usr/share/modules/init/bash; do
        [ -f "$f" ] && init=$f && break
    done
    [ -n "$init" ] || { echo "SKIP: neither lmod nor environment-modules is installed"; exit 77; }
    modules=$PREFIX/share/lbknn/modulefiles
    [ -f "$modules/lbknn/$VERSION" ] || fail "no modulefile $modules/lbknn/$VERSION"
    env -i HOME="$WORK" PATH=/usr/bin:/bin OMPI_ALLOW_RUN_AS_ROOT=1 \
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 bash --norc --noprofile -c '
        set -u
        source "$1"
        module use "$2" && module load "lbknn/$3" || exit 10
        [ "$(command -v lbknn)" = "$4/bin/lbknn" ] || exit 11
        lbknn --version | head -n 1
        [ "$(man -w lbknn)" = "$4/share/man/man1/lbknn.1" ] || exit 12
        man -w ls >/dev/null || exit 13
        [ "$(pkg-config --modversion lbknn)" = "$3" ] || exit 14
        if [ -z "$5" ]; then
            (cd / && /usr/bin/python3 -c "import lbknn; print(lbknn.library_path())") || exit 15
        fi
        module unload lbknn && ! command -v lbknn >/dev/null || exit 16
        ' _ "$init" "$modules" "$VERSION" "$PREFIX" "$SANITIZE" >module.txt 2>&1
    status=$?
    cat module.txt
    case $status in
    0) ;;
    10) fail "module load lbknn/$VERSION failed" ;;
    11) fail "lbknn on PATH is not $PREFIX/bin/lbknn" ;;
    12) fail "man -w lbknn is not the installed page" ;;
    13) fail "after module load, man finds no system page (MANPATH)" ;;
    14) fail "pkg-config lbknn is not the installed $VERSION" ;;
    15) fail "the Python package does not import" ;;
    16) fail "module unload left lbknn on PATH" ;;
    *) fail "the module shell failed ($status)" ;;
    esac
    grep -qx "lbknn $VERSION" module.txt || fail "lbknn --version after module load"
    if [ -z "$SANITIZE" ]; then
        grep -qx "$LIB/liblbknn.so.$MAJOR" module.txt || fail "Python loaded another library"
    fi
    ;;
*)
    fail "unknown scenario $SCENARIO"
    ;;
esac
echo "PASS install.$SCENARIO"
