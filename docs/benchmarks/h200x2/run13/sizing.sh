#!/bin/bash
# A run's sizing on the two GPUs: the plan's claims (sched=trace), each run
# device's split scale and cost as the plan reads them, the learner's lines,
# and the last run's packages as a trace; histogram and Mandelbrot, 6
# untimed runs and 3 timed, profiles off.
export COEXEC_PROFILE=off
for k in histogram:2^22 mandelbrot:4096x4096; do
  K=${k%%:*}; S=${k#*:}
  COEXEC_LOG=coexec_engine::sched=trace,coexec_engine::learn=debug,coexec_engine::engine=debug \
    timeout 60 coexec bench --kernel $K --size $S --devices gpu0,gpu1 --warmup 6 --reps 3 \
    --json --trace $OUT/$K.json > $OUT/$K.out 2> $OUT/$K.log
  tail -c 300 $OUT/$K.out
done
cd $OUT && gzip *.log
