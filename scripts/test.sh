#!/usr/bin/env bash
# The test command: every test of the workspace on lavapipe + CPU workers,
# with both allocator backends and the Khronos validation layer on.
set -euo pipefail
cd "$(dirname "$0")/.."
export COEXEC_VALIDATION=1
export COEXEC_CACHE_DIR="${COEXEC_CACHE_DIR:-$PWD/target/pipeline-cache}"
# Default backend (gpu-allocator): the whole workspace.
cargo test --workspace --release
# VMA backend: the engine and the integration tests again.
cargo test --release --features vma -p coexec -p coexec-engine
