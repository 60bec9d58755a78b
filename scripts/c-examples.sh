#!/usr/bin/env bash
# The C ABI end to end: checks that ffi/include/coexec.h is up to date, builds
# libcoexec.a and libcoexec.so in release, installs them with the header and
# pkg-config files into a prefix, builds examples/c/saxpy.c and
# examples/cpp/mandelbrot.cpp against the *installed* library (pkg-config,
# then CMake for the C example), runs them (each verifies its result), and
# runs the C example once under valgrind.
#
#   bash scripts/c-examples.sh              # prefix: target/c-prefix
#   PREFIX=/opt/coexec bash scripts/c-examples.sh
#
# Needs: cc, c++, pkg-config, cmake, valgrind (apt: build-essential
# pkg-config cmake valgrind). Honours CARGO_TARGET_DIR, CC, CXX, and
# SKIP_VALGRIND=1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PREFIX="${PREFIX:-$ROOT/target/c-prefix}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BUILD="$ROOT/target/c-examples"
CC="${CC:-cc}"
CXX="${CXX:-c++}"
step() { printf '\n== %s\n' "$*"; }

for tool in "$CC" "$CXX" pkg-config cmake; do
  command -v "$tool" >/dev/null || { echo "c-examples: $tool is missing" >&2; exit 1; }
done
if [ "${SKIP_VALGRIND:-0}" != 1 ]; then
  command -v valgrind >/dev/null || { echo "c-examples: valgrind is missing (or set SKIP_VALGRIND=1)" >&2; exit 1; }
fi
# Validation layer on for the example runs when it is installed.
if [ -z "${COEXEC_VALIDATION:-}" ] && ls /usr/share/vulkan/explicit_layer.d/*khronos_validation* >/dev/null 2>&1; then
  export COEXEC_VALIDATION=1
fi
export COEXEC_CACHE_DIR="${COEXEC_CACHE_DIR:-$BUILD/pipeline-cache}"
mkdir -p "$BUILD"

step "header: ffi/include/coexec.h matches cbindgen's output"
cargo test -p coexec-ffi --release --quiet header

step "build: libcoexec.a and libcoexec.so (release)"
# `cargo rustc` so that rustc reports the system libraries the static
# archive needs (cargo replays the note when the build is fresh).
build_log="$BUILD/cargo-build.log"
if ! cargo rustc -p coexec-ffi --release --lib -- --print native-static-libs >"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "c-examples: cargo build failed" >&2
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
echo "static archive needs: $private_libs"
for f in libcoexec.a libcoexec.so; do
  [ -f "$TARGET_DIR/release/$f" ] || { echo "c-examples: $TARGET_DIR/release/$f was not built" >&2; exit 1; }
done

step "install into $PREFIX"
version=$(cargo pkgid -p coexec-ffi | sed 's/.*[@#]//')
major=${version%%.*}
install -d "$PREFIX/include" "$PREFIX/lib/pkgconfig"
install -m 644 ffi/include/coexec.h "$PREFIX/include/coexec.h"
install -m 644 "$TARGET_DIR/release/libcoexec.a" "$PREFIX/lib/libcoexec.a"
install -m 755 "$TARGET_DIR/release/libcoexec.so" "$PREFIX/lib/libcoexec.so.$version"
ln -sfn "libcoexec.so.$version" "$PREFIX/lib/libcoexec.so.$major"
ln -sfn "libcoexec.so.$major" "$PREFIX/lib/libcoexec.so"
for pc in coexec coexec-static; do
  sed -e "s|@PREFIX@|$PREFIX|" -e "s|@VERSION@|$version|" -e "s|@PRIVATE_LIBS@|$private_libs|" \
    "ffi/$pc.pc.in" >"$PREFIX/lib/pkgconfig/$pc.pc"
done
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "pkg-config --cflags --libs coexec:          $(pkg-config --cflags --libs coexec)"
echo "pkg-config --static --libs coexec:          $(pkg-config --static --libs coexec)"
echo "pkg-config --cflags --libs coexec-static:   $(pkg-config --cflags --libs coexec-static)"
ls -l "$PREFIX/include" "$PREFIX/lib"

step "C: examples/c/saxpy.c against the shared library (pkg-config coexec)"
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
"$CC" -std=c99 -O2 -Wall -Wextra -pedantic -Werror examples/c/saxpy.c -o "$BUILD/saxpy" \
  $(pkg-config --cflags --libs coexec) -Wl,-rpath,"$PREFIX/lib"
readelf -d "$BUILD/saxpy" | grep -q "libcoexec.so.$major" \
  || { echo "c-examples: saxpy does not link libcoexec.so.$major" >&2; exit 1; }
(cd "$BUILD" && ./saxpy)

step "C++: examples/cpp/mandelbrot.cpp against the static library (pkg-config coexec-static)"
# shellcheck disable=SC2046
"$CXX" -std=c++17 -O2 -Wall -Wextra -pedantic -Werror examples/cpp/mandelbrot.cpp \
  -o "$BUILD/mandelbrot" $(pkg-config --cflags --libs coexec-static)
if readelf -d "$BUILD/mandelbrot" | grep -q libcoexec; then
  echo "c-examples: mandelbrot should not need libcoexec.so" >&2; exit 1
fi
(cd "$BUILD" && ./mandelbrot "$BUILD/mandelbrot.pgm")
[ "$(head -c 2 "$BUILD/mandelbrot.pgm")" = P5 ] || { echo "c-examples: bad PGM" >&2; exit 1; }

step "CMake: examples/c/CMakeLists.txt (pkg_check_modules)"
rm -rf "$BUILD/cmake"
cmake -S examples/c -B "$BUILD/cmake" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_C_COMPILER="$CC" >/dev/null
cmake --build "$BUILD/cmake" >/dev/null
(cd "$BUILD/cmake" && ./saxpy >/dev/null) && echo "cmake-built saxpy: OK"

if [ "${SKIP_VALGRIND:-0}" != 1 ]; then
  step "valgrind: saxpy (memcheck, leak check; driver/loader suppressions in ffi/valgrind.supp)"
  # Validation off: the layer under valgrind takes minutes and is not ours.
  (cd "$BUILD" && COEXEC_VALIDATION=0 valgrind --error-exitcode=1 --leak-check=full \
    --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
    --suppressions="$ROOT/ffi/valgrind.supp" --log-file="$BUILD/valgrind.log" ./saxpy >/dev/null) || {
    echo "c-examples: valgrind reported errors:" >&2
    cat "$BUILD/valgrind.log" >&2
    exit 1
  }
  grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost" "$BUILD/valgrind.log" || true
fi

step "c-examples: all passed"
