#!/usr/bin/env bash
# BENCHMARKS.md section 5: the distributed Mandelbrot on 1, 2 and 4 ranks of
# this machine against one engine alone (interleaved rounds, so that load
# from elsewhere falls on all of them alike), and the claim rate of the RMA
# counter on 1, 2 and 4 ranks. Prints one line per measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p coexec-mpi --examples
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
ex="$target_dir/release/examples"
root=()
[ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
run() { local n=$1; shift; mpirun -n "$n" --oversubscribe "${root[@]}" "$@" | tail -1; }
size="${SIZE:-512}"
for round in 1 2 3; do
  for devices in all gpu; do
    echo "round $round, devices $devices:"
    run 1 "$ex/mandelbrot" --width "$size" --height "$size" --devices "$devices" --reps 15 --alone
    for n in 1 2 4; do
      run "$n" "$ex/mandelbrot" --width "$size" --height "$size" --devices "$devices" --reps 15
    done
  done
  for n in 1 2 4; do run "$n" "$ex/claim_rate" 50000; done
done
