#!/bin/bash
# h200x2 run 16, second call: the rule again without the one-unit
# threshold (jacobi, spmv: CPUs worth 10-30% of the GPUs; Collatz,
# Mandelbrot: a few percent), on and off in interleaved fresh processes,
# as ab-leave-cpu.sh; one learner log of jacobi; then HGuided on the two
# GPUs alone with their transfers on the compute queue (auto) and on the
# copy engine's queue (dedicated), against dynamic:8 on it.
export PATH=$PWD/.device/bin:$PATH COEXEC_PROFILE=off
mkdir -p $OUT/ab $OUT/q
OUT=$OUT/ab SPECS="${SPECS:-jacobi:8192x4096 spmv:2^21 collatz:2^23 mandelbrot:4096x4096}" LIMIT=${LIMIT:-150} \
  bash docs/benchmarks/h200x2/run16/ab-leave-cpu.sh > /dev/null 2>&1
cut -c1-110 $OUT/ab/summary.txt
COEXEC_LOG="coexec_engine::learn=debug" coexec bench --kernel jacobi --size 8192x4096 --devices all --warmup 0 --reps 10 --json > $OUT/jacobi-learn.json 2> $OUT/jacobi-learn.log
OUT=$OUT/q PROCS=2 WARMUP=3 REPS=5 DEVS=gpu0,gpu1 GPUDEVS=gpu0,gpu1 \
  SPECS="taylor:16776960 collatz:2^23 mandelbrot:4096x4096 jacobi:8192x4096" \
  CONFIGS="auto||;dedicated|COEXEC_TRANSFER_QUEUE=dedicated|" timeout 120 bash scripts/cold-cfg.sh
cut -c1-90 $OUT/q/summary.txt
