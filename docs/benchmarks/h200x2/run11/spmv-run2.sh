#!/bin/bash
# spmv's second run (the first warm one) on cpu,gpu0 (30 workers): its
# packages as a trace, the GPU loop's and the plan's lines, in four fresh
# processes; profiles off.
R=$OUT; export COEXEC_PROFILE=off
for p in 1 2 3 4; do
  COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=trace,coexec_engine::sched::plan=trace \
  timeout 60 coexec bench --kernel spmv --size 2^21 --devices cpu,gpu0 --warmup 1 --reps 1 \
    --trace $R/spmv-run2-$p.json > $R/spmv-run2-$p.log 2>&1
  echo "p$p $(grep -o '[0-9.]* s (median' $R/spmv-run2-$p.log)" >> $R/summary.txt
done
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
