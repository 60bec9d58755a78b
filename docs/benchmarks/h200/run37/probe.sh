#!/bin/bash
# h200 run 37: (1) cold Mandelbrot traced (first run's packages as a
# Chrome trace, the GPU loop's and the run's trace lines), co-executed
# and the GPU alone, PROCS fresh processes each; (2) the lone GPU's depth
# ladder on histogram and Collatz (learner debug lines, RUNS runs a
# process). Profiles off. Results under $OUT/probe.
R=$OUT/probe; mkdir -p $R/m $R/l; export COEXEC_PROFILE=off
for p in $(seq ${PROCS:-4}); do
  COEXEC_LOG=coexec_engine::exec::gpu=trace,coexec_engine::exec::gpu_steal=trace,coexec_engine::engine::run=trace \
    coexec bench --kernel mandelbrot --size 4096x4096 --devices all --warmup 0 --reps 1 --json --trace $R/m/all-$p.json --trace-first > $R/m/all-$p.out 2> $R/m/all-$p.log
  COEXEC_TRANSFER_QUEUE=dedicated coexec bench --kernel mandelbrot --size 4096x4096 --devices gpu --scheduler dynamic:8 --warmup 0 --reps 1 --json > $R/m/gpu-$p.out 2>&1
done
for k in histogram:2^22 collatz:2^23; do
  for p in $(seq ${LPROCS:-3}); do
    COEXEC_LOG=coexec_engine::learn=debug coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 0 --reps ${RUNS:-14} --json > $R/l/${k%%:*}-$p.out 2> $R/l/${k%%:*}-$p.log
  done
done
cd $OUT && tar czf probe.tgz probe && rm -rf probe
