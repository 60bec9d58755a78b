#!/usr/bin/env bash
# Runs each cargo-fuzz target for a bounded time (default 45 s each) from the
# checked-in corpus. Needs a nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz`); skips with a message where they are missing.
#   bash scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-45}"
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: nightly toolchain or cargo-fuzz not installed; skipped"
  exit 0
fi
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
  (cd fuzz && ASAN_OPTIONS=detect_leaks=0 cargo +nightly fuzz run "$t" "$scratch" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -detect_leaks=0)
  rm -rf "$scratch"
done
echo "fuzz: all targets ran ${secs}s without a crash"
