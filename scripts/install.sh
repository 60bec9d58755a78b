#!/usr/bin/env bash
# Builds the C ABI (crate coexec-ffi) in release and installs it for C and C++
# programs:
#
#   $PREFIX/include/coexec.h
#   $PREFIX/lib/libcoexec.a
#   $PREFIX/lib/libcoexec.so -> libcoexec.so.<major> -> libcoexec.so.<version>
#   $PREFIX/lib/pkgconfig/coexec.pc          (shared; Libs.private for --static)
#   $PREFIX/lib/pkgconfig/coexec-static.pc   (libcoexec.a + its system libraries)
#   $PREFIX/share/coexec/valgrind.supp       (valgrind suppressions for programs using it)
#
#   bash scripts/install.sh                          # PREFIX=/usr/local
#   PREFIX=$HOME/.local bash scripts/install.sh
#   PREFIX=/opt/coexec FEATURES=vma bash scripts/install.sh
#
# Environment: PREFIX (default /usr/local; must be writable, no sudo is
# used), CARGO_TARGET_DIR (where cargo builds, default target/), FEATURES
# (cargo features of coexec-ffi, e.g. vma). Needs cargo (see README.md).
# The installed header is the checked-in ffi/include/coexec.h.
set -euo pipefail
PREFIX="${PREFIX:-/usr/local}"
case "$PREFIX" in
  /*) ;;
  *) PREFIX="$PWD/$PREFIX" ;; # relative to where it was run; .pc files need it absolute
esac
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
FEATURES="${FEATURES:-}"

echo "install: building libcoexec.a and libcoexec.so (release${FEATURES:+, features $FEATURES})"
# `cargo rustc` so that rustc reports the system libraries the static archive
# needs (cargo replays the note when the build is fresh).
mkdir -p "$TARGET_DIR"
build_log=$(mktemp "${TMPDIR:-/tmp}/coexec-install.XXXXXX")
trap 'rm -f "$build_log"' EXIT
feature_args=()
[ -n "$FEATURES" ] && feature_args=(--features "$FEATURES")
if ! cargo rustc -p coexec-ffi --release --lib "${feature_args[@]}" -- --print native-static-libs \
  >"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "install: cargo build failed" >&2
  exit 1
fi
grep -v 'native-static-libs' "$build_log" | tail -n 3 || true
private_libs=$(sed -n 's/.*native-static-libs: //p' "$build_log" | tail -n 1)
if [ -z "$private_libs" ]; then
  # rustc's list for this crate on Linux; used if the note was not replayed.
  private_libs="-lstdc++ -lhwloc -lm -ludev -lpthread -ldl -lgcc_s -lutil -lrt -lc"
fi
# Drop repeats and libc (implied).
private_libs=$(echo "$private_libs" | tr ' ' '\n' | awk 'NF && $0 != "-lc" && !seen[$0]++' | paste -sd' ')
echo "install: the static archive needs: $private_libs"
for f in libcoexec.a libcoexec.so; do
  [ -f "$TARGET_DIR/release/$f" ] || { echo "install: $TARGET_DIR/release/$f was not built" >&2; exit 1; }
done

version=$(cargo pkgid -p coexec-ffi | sed 's/.*[@#]//')
major=${version%%.*}
echo "install: coexec $version into $PREFIX"
install -d "$PREFIX/include" "$PREFIX/lib/pkgconfig" "$PREFIX/share/coexec"
install -m 644 ffi/include/coexec.h "$PREFIX/include/coexec.h"
install -m 644 ffi/valgrind.supp "$PREFIX/share/coexec/valgrind.supp"
install -m 644 "$TARGET_DIR/release/libcoexec.a" "$PREFIX/lib/libcoexec.a"
install -m 755 "$TARGET_DIR/release/libcoexec.so" "$PREFIX/lib/libcoexec.so.$version"
ln -sfn "libcoexec.so.$version" "$PREFIX/lib/libcoexec.so.$major"
ln -sfn "libcoexec.so.$major" "$PREFIX/lib/libcoexec.so"
for pc in coexec coexec-static; do
  sed -e "s|@PREFIX@|$PREFIX|" -e "s|@VERSION@|$version|" -e "s|@PRIVATE_LIBS@|$private_libs|" \
    "ffi/$pc.pc.in" >"$PREFIX/lib/pkgconfig/$pc.pc"
  chmod 644 "$PREFIX/lib/pkgconfig/$pc.pc"
done

cat <<EOF
install: done. Compile and link against it with
  export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
  cc app.c \$(pkg-config --cflags --libs coexec) -Wl,-rpath,$PREFIX/lib     # shared
  c++ app.cpp \$(pkg-config --cflags --libs coexec-static)                 # static
(-Wl,-rpath is not needed where $PREFIX/lib is in the dynamic linker's path
and ldconfig has run; see ffi/README.md.) Under valgrind, use
  valgrind --leak-check=full --suppressions=$PREFIX/share/coexec/valgrind.supp ./app
EOF
