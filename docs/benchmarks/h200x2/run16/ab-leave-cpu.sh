#!/bin/bash
# h200x2 run 16: CPU workers that add little beside two GPUs left out by
# the model (COEXEC_LEAVE_CPU=0 off), on and off in interleaved fresh
# processes on every device (31 workers + 2 GPUs), against the two GPUs
# alone under dynamic:8 on the dedicated queue; 3 warm-ups, the median of
# 5; cold: each process's first run. Profiles off. Results in $OUT.
export PATH=$PWD/.device/bin:$PATH
PROCS=${PROCS:-3} WARMUP=3 REPS=5 DEVS=all GPUDEVS=gpu0,gpu1 \
  SPECS="${SPECS:-collatz:2^23 taylor:16776960 mandelbrot:4096x4096 gather:2^23 histogram:2^22 jacobi:8192x4096 spmv:2^21}" \
  CONFIGS="leave||;keep|COEXEC_LEAVE_CPU=0|" timeout ${LIMIT:-400} bash scripts/cold-cfg.sh
cat $OUT/summary.txt | cut -c1-110
