#!/usr/bin/env bash
# The distributed Mandelbrot (mpi/examples/mandelbrot.rs) and dot product
# (mpi/examples/mpi_dot.rs) on 2 MPI ranks of this machine: builds them, runs
# them under mpirun and fails when rank 0 finds a pixel, or a dot product,
# that differs from the CPU reference (README: Across nodes, MPI).
# Needs Open MPI (scripts/setup.sh installs it). Extra arguments go to the
# Mandelbrot example (--width, --height, --iters, --rows, --workers, --reps).
set -euo pipefail
cd "$(dirname "$0")/.."
export COEXEC_VALIDATION="${COEXEC_VALIDATION:-1}"
cargo build --release -p coexec-mpi --example mandelbrot --example mpi_dot
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
root=()
[ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
# One CPU worker per rank: two ranks share this machine's cores.
mpirun -n "${RANKS:-2}" --oversubscribe "${root[@]}" --timeout 300 \
  "$target_dir/release/examples/mandelbrot" --width 192 --height 160 --workers 1 "$@"
# A length that is not a multiple of the work-group (256): the last group
# is partial. Exact check (integer-valued data).
mpirun -n "${RANKS:-2}" --oversubscribe "${root[@]}" --timeout 300 \
  "$target_dir/release/examples/mpi_dot" --n 100003 --groups 2 --workers 1
echo "mpi-example: verified on ${RANKS:-2} ranks"
