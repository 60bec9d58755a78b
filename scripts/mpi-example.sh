#!/usr/bin/env bash
# The distributed Mandelbrot (mpi/examples/mandelbrot.rs) on 2 MPI ranks of
# this machine: builds it, runs it under mpirun and fails when rank 0 finds
# a pixel that differs from the CPU reference (README: Across nodes, MPI).
# Needs Open MPI (scripts/setup.sh installs it). Extra arguments go to the
# example (--width, --height, --iters, --rows, --workers, --reps).
set -euo pipefail
cd "$(dirname "$0")/.."
export COEXEC_VALIDATION="${COEXEC_VALIDATION:-1}"
cargo build --release -p coexec-mpi --example mandelbrot
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
root=()
[ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
# One CPU worker per rank: two ranks share this machine's cores.
mpirun -n "${RANKS:-2}" --oversubscribe "${root[@]}" --timeout 300 \
  "$target_dir/release/examples/mandelbrot" --width 192 --height 160 --workers 1 "$@"
echo "mpi-example: verified on ${RANKS:-2} ranks"
