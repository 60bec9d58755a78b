#!/bin/bash
# h200 run 37, call 2: cold runs' start and end traced (the GPU loop's and
# the run's trace lines) for the GPU alone and co-executed, Mandelbrot and
# Collatz, PROCS fresh processes each. Results under $OUT/probe2.
R=$OUT/probe2; mkdir -p $R; export COEXEC_PROFILE=off
L=coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace,coexec_engine::engine::run=trace,coexec_engine::engine::phases=trace
for k in mandelbrot:4096x4096 collatz:2^23; do
  for p in $(seq ${PROCS:-2}); do
    COEXEC_LOG=$L COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel ${k%%:*} --size ${k#*:} --devices gpu --scheduler dynamic:8 --warmup 0 --reps 1 --json --trace $R/${k%%:*}-gpu-$p.json --trace-first > $R/${k%%:*}-gpu-$p.out 2> $R/${k%%:*}-gpu-$p.log
    COEXEC_LOG=$L coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 0 --reps 1 --json --trace $R/${k%%:*}-all-$p.json --trace-first > $R/${k%%:*}-all-$p.out 2> $R/${k%%:*}-all-$p.log
  done
done
cd $OUT && tar czf probe2.tgz probe2 && rm -rf probe2
