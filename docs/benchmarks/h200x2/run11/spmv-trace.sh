#!/bin/bash
# Where spmv's co-executed warm runs (cpu,gpu0, 30 workers) spend 2.5 ms
# against the GPU alone's 1.55: the last run's packages as a trace, the
# learner's and the GPU loop's lines; the GPU alone beside it.
R=$OUT; export COEXEC_PROFILE=off
for p in 1 2 3; do
  COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::exec::gpu=trace \
  timeout 60 coexec bench --kernel spmv --size 2^21 --devices cpu,gpu0 --warmup 3 --reps 5 \
    --trace $R/spmv-cg-$p.json > $R/spmv-cg-$p.log 2>&1
  timeout 60 coexec bench --kernel spmv --size 2^21 --devices gpu0 --warmup 3 --reps 5 \
    --trace $R/spmv-g-$p.json > $R/spmv-g-$p.log 2>&1
  echo "p$p cpu,gpu0 $(grep -o '[0-9.]* s (median' $R/spmv-cg-$p.log) gpu0 $(grep -o '[0-9.]* s (median' $R/spmv-g-$p.log)" >> $R/summary.txt
done
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
