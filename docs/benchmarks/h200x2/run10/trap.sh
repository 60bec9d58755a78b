#!/bin/bash
# The CPU alone kept on a kernel the GPU runs seven times faster (histogram
# 2^22, `--devices cpu,gpu0` on the two-GPU engine, 31 CPU workers): six
# fresh processes with the learner's lines, three warm-ups and the median
# of five, profiles off; the same for spmv, whose processes were bistable.
R=$OUT; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug
for spec in histogram:2^22 spmv:2^21; do
  k=${spec%%:*}; s=${spec#*:}
  for p in 1 2 3 4 5 6; do
    f=$R/$k-$p.log
    timeout 60 coexec bench --kernel $k --size $s --devices cpu,gpu0 --warmup 3 --reps 5 > $f 2>&1
    echo "$k p$p $(grep -E 'median of' $f | tail -1 | cut -c1-120)" >> $R/summary.txt
  done
done
(cd $R && tar czf logs.tgz *.log && rm -f *.log)
