#!/usr/bin/env bash
# The test command: every test of the workspace on lavapipe + CPU workers,
# with both allocator backends and the Khronos validation layer on, then the
# loom model of the claim protocol (and miri on the scheduling layer where a
# nightly toolchain with miri is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
export COEXEC_VALIDATION=1
export COEXEC_CACHE_DIR="${COEXEC_CACHE_DIR:-$PWD/target/pipeline-cache}"
# Default backend (gpu-allocator): the whole workspace, with the test-only
# fault-injection hooks (GPU failures requeued on lavapipe).
cargo test --workspace --release --features coexec/test-hooks
# Staged memory (device-local mirrors, as on a discrete GPU) on lavapipe: the
# root crate's integration tests again, every GPU run staged.
COEXEC_MEMORY=staged cargo test --release --features coexec/test-hooks -p coexec --tests
# Older drivers (issue 19): the device used as Vulkan 1.1 with
# VK_KHR_timeline_semaphore, and without timeline semaphores (fences), the
# validation layer checking against Vulkan 1.1: the whole-engine tests
# (outputs verified, every scheduler, GPU faults requeued, staged memory).
for driver in vulkan1.1 no-timelines; do
  COEXEC_EMULATE_DRIVER=$driver cargo test --release --features coexec/test-hooks -p coexec \
    --test coexec --test faults --test staged --test workloads
done
# The lean build (README: Features; no runtime GLSL, no hwloc, no C++): the
# engine, the C library and the root crate's tests that build no GLSL (the
# workloads run their checked-in SPIR-V; the others are cfg'd out). Doc tests
# are the default build's (their examples compile GLSL).
cargo test --release --no-default-features -p coexec-engine -p coexec-ffi -p coexec --lib --bins --tests
cargo run --release --no-default-features --example footprint
# Cross-compilation (README: Building for aarch64 Linux): the lean libraries
# and command type-check for aarch64 (no cross linker here, so no link).
if rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  cargo check --release --no-default-features --target aarch64-unknown-linux-gnu \
    -p coexec-engine -p coexec-ffi -p coexec --lib --bins
else
  echo "aarch64: rustup target aarch64-unknown-linux-gnu not installed; cross check skipped"
fi
# The benchmark suite at its quick scale: every kernel, every scheduler,
# every output verified (a smoke test: no timing is asserted).
cargo run --release --features coexec/test-hooks --bin coexec -- suite --quick --no-scaling --reps 1
cargo run --release --features coexec/test-hooks --bin coexec -- suite --set comparable --quick --no-scaling --reps 1
# Several GPUs on one: COEXEC_DUPLICATE_DEVICES opens lavapipe twice, and the
# command runs a kernel on the CPU and both logical GPUs and verifies it
# (tests/multi.rs, in the workspace run above, covers every scheduler, GPU
# faults and shared buffers on 2-3 logical GPUs).
COEXEC_DUPLICATE_DEVICES=2 cargo run --release --features coexec/test-hooks --bin coexec -- \
  bench --kernel mandelbrot --size 512x512 --devices cpu,gpu0,gpu1 --scheduler dynamic:16 --reps 1
# The main Rust example, as a user runs it (it verifies its own output).
cargo run --release --features coexec/test-hooks --example saxpy
# Across nodes: the distributed Mandelbrot on 2 MPI ranks of this machine,
# checked against the CPU reference (its exactly-once tests ran above, in
# the workspace's tests).
bash scripts/mpi-example.sh
# The iterative stencil at a small size, staged and zero-copy (it verifies
# every configuration against its CPU reference).
cargo run --release --example stencil -- 256 256 20
# The cold-start testbed, small (it verifies every run against its hash).
cargo run --release --example cold_start -- irregular all 64 2
# The core benchmark harness at its smallest (its flags parse, a section runs).
cargo bench --bench core -- --quick --only claim
# A crate outside the workspace that depends on coexec by path, built as a
# user's would be (README: "Building a crate that depends on coexec").
bash scripts/downstream.sh
# The API documentation builds without warnings (broken links included).
RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps
# VMA backend: the engine and the root crate's tests again.
cargo test --release --features vma -p coexec -p coexec-engine
# The claim protocol under loom (its own target dir: --cfg loom rebuilds all).
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p coexec-engine --release --lib loom
# miri on the pure scheduling layer, when available (not installable offline).
if cargo +nightly miri --version >/dev/null 2>&1; then
  MIRIFLAGS="-Zmiri-disable-isolation" CARGO_TARGET_DIR=target/miri \
    cargo +nightly miri test -p coexec-engine --lib sched -- --skip prop_
else
  echo "miri: not installed (cargo +nightly miri); skipped"
fi
# The C ABI: header freshness, install (scripts/install.sh), the C and C++
# examples through pkg-config and CMake, and each under valgrind in the
# default environment.
bash scripts/c-examples.sh
# Fuzzing, bounded: SPIR-V reflection and GLSL compilation, 30 s each from
# the checked-in corpus (skipped where nightly + cargo-fuzz are missing).
bash scripts/fuzz.sh 30
