#!/bin/bash
# h200x2 run 16, third call: two GPUs without the CPU workers on their own
# transfer queues in every run (COEXEC_GPUS_OWN_QUEUE=0 off), on and off in
# interleaved fresh processes, on the two GPUs and on every device (where
# the CPU, worth a few percent, is left out), against the two GPUs under
# dynamic:8 on the dedicated queue; 3 warm-ups, the median of 5; profiles
# off.
export PATH=$PWD/.device/bin:$PATH COEXEC_PROFILE=off
S="${SPECS:-taylor:16776960 collatz:2^23 mandelbrot:4096x4096 gather:2^23 histogram:2^22 jacobi:8192x4096}"
for devs in gpu0,gpu1 all; do
  mkdir -p $OUT/$devs
  OUT=$OUT/$devs PROCS=${PROCS:-2} WARMUP=3 REPS=5 DEVS=$devs GPUDEVS=gpu0,gpu1 SPECS="$S" \
    CONFIGS="own||;compute|COEXEC_GPUS_OWN_QUEUE=0|" timeout ${LIMIT:-100} bash scripts/cold-cfg.sh
  cut -c1-100 $OUT/$devs/summary.txt
done
