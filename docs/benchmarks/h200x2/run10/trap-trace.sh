#!/bin/bash
# Why the GPU claims nothing in some co-executed histogram runs (cpu,gpu0
# on the two-GPU engine): four fresh processes, the learner's lines and the
# GPU loop's trace (when it starts, each package), one warm-up and three
# timed runs, profiles off.
R=$OUT; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=trace,coexec_engine::sched=trace
for p in 1 2 3 4; do
  f=$R/histogram-trace-$p.log
  timeout 60 coexec bench --kernel histogram --size 2^22 --devices cpu,gpu0 --warmup 2 --reps 3 > $f 2>&1
  echo "p$p $(grep -E 'median of' $f | tail -1 | cut -c1-120)" >> $R/summary.txt
done
(cd $R && tar czf logs.tgz *.log && rm -f *.log)
