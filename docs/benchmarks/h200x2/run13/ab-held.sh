#!/bin/bash
# The held units in the share of an even finish (COEXEC_HELD_SHARE): on and
# off in interleaved fresh processes, one binary, on each device set of
# SETS (default: the two GPUs, and every device); 6 untimed runs, the
# median of 5; against GPU 0 alone (dynamic:8, dedicated queue). Results
# under $OUT/<set>/.
set -u
base=$OUT
for devs in ${SETS:-gpu0,gpu1 all}; do
  d=$base/${devs//,/-}; mkdir -p $d
  OUT=$d PROCS=${PROCS:-3} WARMUP=6 REPS=5 DEVS=$devs GPUDEVS=gpu0 \
    SPECS="${SPECS:-mandelbrot:4096x4096 histogram:2^22 collatz:2^23 gather:2^23 taylor:16776960 jacobi:8192x4096 spmv:2^21}" \
    CONFIGS="held||;noheld|COEXEC_HELD_SHARE=0|" bash scripts/cold-cfg.sh
done
