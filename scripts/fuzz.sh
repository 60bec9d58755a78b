#!/usr/bin/env bash
# Runs each cargo-fuzz target for a bounded time (default 45 s each) from the
# checked-in corpus.
#   bash scripts/fuzz.sh [SECONDS]
# cargo-fuzz builds with AddressSanitizer and libFuzzer's coverage flags,
# which are unstable compiler options: with a nightly toolchain installed it
# is used; otherwise the default (stable) toolchain runs with
# RUSTC_BOOTSTRAP=1, which lets it accept them (its ASan runtime ships with
# it). COEXEC_FUZZ_TOOLCHAIN=stable forces the latter. cargo-fuzz itself is
# installed from crates.io where missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-45}"
tc=()
if [ "${COEXEC_FUZZ_TOOLCHAIN:-}" != stable ] && cargo +nightly --version >/dev/null 2>&1; then
  tc=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz 0.13.2 from crates.io"
  cargo install cargo-fuzz --version 0.13.2 --locked --quiet
fi
echo "fuzz: $(cargo "${tc[@]}" --version)${RUSTC_BOOTSTRAP:+ (RUSTC_BOOTSTRAP=1)}"
export SHADERC_LIB_DIR="$PWD/.shaderc"
for t in spirv_reflect glsl_compile c_abi; do
  mkdir -p "fuzz/corpus/$t"
  # -detect_leaks=0: shaderc-rs 0.10 never releases the compilation result
  # of a failed compile (Compiler::handle_compilation_result returns the
  # error without shaderc_result_release), about 1 KiB per failed compile;
  # an upstream leak, not a crash (c_abi: Mesa's lavapipe keeps a few small
  # allocations too). Crashes, panics and ASan errors still fail.
  # New inputs go to a scratch folder (the first corpus folder is the one
  # libFuzzer writes and reduces in); the checked-in corpus is only read.
  scratch="$(mktemp -d)"
  (cd fuzz && ASAN_OPTIONS=detect_leaks=0 cargo "${tc[@]}" fuzz run "$t" "$scratch" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -detect_leaks=0)
  rm -rf "$scratch"
done
echo "fuzz: all targets ran ${secs}s without a crash"
