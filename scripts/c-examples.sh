#!/usr/bin/env bash
# The C ABI end to end: checks that ffi/include/coexec.h is up to date,
# builds and installs the library into a prefix with scripts/install.sh,
# builds examples/c/saxpy.c, examples/c/axpy2d.c, examples/c/dot.c and
# examples/cpp/mandelbrot.cpp against the *installed* library (pkg-config,
# then CMake for the C examples), runs them (each verifies its result), and
# runs them under valgrind in the default environment (COEXEC_VALIDATION
# unset, as a user's program runs). ffi/tests/misuse.c (every misuse of the C
# ABI found so far, each expecting its status) runs plainly (its stdout must
# stay empty: nothing of the library's may print there), under
# AddressSanitizer (gcc -fsanitize=address; the Rust library built normally)
# and under valgrind.
#
#   bash scripts/c-examples.sh              # prefix: $CARGO_TARGET_DIR/c-prefix
#   PREFIX=/opt/coexec bash scripts/c-examples.sh
#
# Needs: cc, c++, pkg-config, cmake, valgrind, gcc with libasan (apt:
# build-essential pkg-config cmake valgrind). Honours CARGO_TARGET_DIR
# (default target/; the prefix and build folder go under it), PREFIX, CC,
# CXX, SKIP_VALGRIND=1 and SKIP_ASAN=1.
set -euo pipefail
case "${PREFIX:-}" in
  "" | /*) ;;
  *) PREFIX="$PWD/$PREFIX" ;; # relative to where it was run
esac
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
PREFIX="${PREFIX:-$TARGET_DIR/c-prefix}"
BUILD="$TARGET_DIR/c-examples"
CC="${CC:-cc}"
CXX="${CXX:-c++}"
step() { printf '\n== %s\n' "$*"; }

for tool in "$CC" "$CXX" pkg-config cmake; do
  command -v "$tool" >/dev/null || { echo "c-examples: $tool is missing" >&2; exit 1; }
done
if [ "${SKIP_VALGRIND:-0}" != 1 ]; then
  command -v valgrind >/dev/null || { echo "c-examples: valgrind is missing (or set SKIP_VALGRIND=1)" >&2; exit 1; }
fi
# Validation layer on for the plain example runs when it is installed (the
# valgrind runs below use the default environment instead).
if [ -z "${COEXEC_VALIDATION:-}" ] && ls /usr/share/vulkan/explicit_layer.d/*khronos_validation* >/dev/null 2>&1; then
  export COEXEC_VALIDATION=1
fi
export COEXEC_CACHE_DIR="${COEXEC_CACHE_DIR:-$BUILD/pipeline-cache}"
mkdir -p "$BUILD"

step "header: ffi/include/coexec.h matches cbindgen's output"
cargo test -p coexec-ffi --release --quiet header

step "build and install into $PREFIX (scripts/install.sh)"
PREFIX="$PREFIX" CARGO_TARGET_DIR="$TARGET_DIR" bash scripts/install.sh
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
version=$(pkg-config --modversion coexec)
major=${version%%.*}
echo "pkg-config --cflags --libs coexec:          $(pkg-config --cflags --libs coexec)"
echo "pkg-config --static --libs coexec:          $(pkg-config --static --libs coexec)"
echo "pkg-config --cflags --libs coexec-static:   $(pkg-config --cflags --libs coexec-static)"
ls -l "$PREFIX/include" "$PREFIX/lib"

# A C example built against the shared library (pkg-config coexec), checked
# to link libcoexec.so.<major>, then run: NAME STD [what it is].
shared_c_example() {
  local name=$1 std=$2
  step "C: examples/c/$name.c${3:+ ($3)} against the shared library (pkg-config coexec)"
  # shellcheck disable=SC2046 # word splitting of pkg-config output is intended
  "$CC" -std="$std" -O2 -Wall -Wextra -pedantic -Werror "examples/c/$name.c" -o "$BUILD/$name" \
    $(pkg-config --cflags --libs coexec) -lm -Wl,-rpath,"$PREFIX/lib"
  readelf -d "$BUILD/$name" | grep -q "libcoexec.so.$major" \
    || { echo "c-examples: $name does not link libcoexec.so.$major" >&2; exit 1; }
  (cd "$BUILD" && "./$name")
}
shared_c_example saxpy c99
shared_c_example axpy2d c11 "written from the header and READMEs alone"
shared_c_example dot c99 "a reduction output"

step "C: ffi/tests/misuse.c (misuse of the C ABI; stdout must stay empty)"
# shellcheck disable=SC2046
"$CC" -std=c11 -O2 -Wall -Wextra -pedantic -Werror ffi/tests/misuse.c -o "$BUILD/misuse" \
  $(pkg-config --cflags --libs coexec) -lm -Wl,-rpath,"$PREFIX/lib"
(cd "$BUILD" && ./misuse >"$BUILD/misuse.stdout" 2>"$BUILD/misuse.stderr") || {
  cat "$BUILD/misuse.stderr" >&2
  echo "c-examples: misuse failed" >&2
  exit 1
}
tail -n 1 "$BUILD/misuse.stderr"
if [ -s "$BUILD/misuse.stdout" ]; then
  echo "c-examples: something printed to stdout ($(wc -l <"$BUILD/misuse.stdout") lines):" >&2
  head -n 20 "$BUILD/misuse.stdout" >&2
  exit 1
fi

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  step "ASan: ffi/tests/misuse.c built with gcc -fsanitize=address"
  # Leaks are valgrind's job below (LeakSanitizer would report the Vulkan
  # driver's and LLVM's one-off allocations, which valgrind.supp covers).
  # shellcheck disable=SC2046
  gcc -std=c11 -O1 -g -fsanitize=address -fno-omit-frame-pointer ffi/tests/misuse.c \
    -o "$BUILD/misuse-asan" $(pkg-config --cflags --libs coexec) -lm -Wl,-rpath,"$PREFIX/lib"
  (cd "$BUILD" && ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 ./misuse-asan \
    >/dev/null 2>"$BUILD/misuse-asan.stderr") || {
    cat "$BUILD/misuse-asan.stderr" >&2
    echo "c-examples: misuse under ASan failed" >&2
    exit 1
  }
  tail -n 1 "$BUILD/misuse-asan.stderr"
fi

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
for name in saxpy axpy2d dot; do
  (cd "$BUILD/cmake" && "./$name" >/dev/null)
  echo "cmake-built $name: OK"
done

if [ "${SKIP_VALGRIND:-0}" != 1 ]; then
  # memcheck with leak check; ffi/valgrind.supp (installed with the library)
  # suppresses the driver, loader and LLVM by object name and a few known
  # one-offs outside coexec by function name (nothing of coexec's own);
  # ffi/tests/known-leaks.supp names shaderc-rs's leak per GLSL compile error,
  # a known item kept out of the installed file. The default environment: no
  # COEXEC_VALIDATION (validation off, as a user's program runs; the layer
  # under valgrind would take minutes and is not ours).
  vg() {
    local name=$1
    shift
    local log="$BUILD/valgrind-$name.log"
    step "valgrind: $name (COEXEC_VALIDATION unset)"
    (cd "$BUILD" && env -u COEXEC_VALIDATION valgrind --error-exitcode=1 --leak-check=full \
      --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
      --suppressions="$ROOT/ffi/valgrind.supp" --suppressions="$ROOT/ffi/tests/known-leaks.supp" \
      --log-file="$log" "$@" >/dev/null 2>"$BUILD/valgrind-$name.stderr") || {
      echo "c-examples: valgrind reported errors for $name (or it failed):" >&2
      cat "$log" "$BUILD/valgrind-$name.stderr" >&2
      exit 1
    }
    grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost" "$log" || true
  }
  vg saxpy ./saxpy
  vg axpy2d ./axpy2d
  vg dot ./dot 100000 1
  vg mandelbrot ./mandelbrot "$BUILD/mandelbrot-valgrind.pgm"
  vg misuse ./misuse
fi

step "c-examples: all passed"
