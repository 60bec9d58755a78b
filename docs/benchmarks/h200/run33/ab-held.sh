#!/bin/bash
# The held units in the share of an even finish (COEXEC_HELD_SHARE) on one
# H200 with the CPU workers: on and off in interleaved fresh processes, one
# binary; 6 untimed runs, the median of 5; against the GPU alone
# (dynamic:8, dedicated queue). Results under $OUT.
PROCS=${PROCS:-3} WARMUP=6 REPS=5 DEVS=all GPUDEVS=gpu \
  SPECS="${SPECS:-jacobi:8192x4096 spmv:2^21 histogram:2^22 mandelbrot:4096x4096 gather:2^23 collatz:2^23 taylor:16776960}" \
  CONFIGS="held||;noheld|COEXEC_HELD_SHARE=0|" bash scripts/cold-cfg.sh
