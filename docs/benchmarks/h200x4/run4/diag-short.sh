#!/bin/bash
# spmv and histogram on CPU + 4 GPUs and on the 4 GPUs, as the sweep
# measures them (3 warm-ups, the median of 3, profiles off), three
# interleaved fresh processes per binary, with the learner's lines.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug
for spec in histogram:2^22 spmv:2^21; do
  k=${spec%%:*}; s=${spec#*:}
  for d in all gpu0,gpu1,gpu2,gpu3; do
    for p in 1 2 3; do
      for bin in coexec coexec-old; do
        f=$R/$k-${d//,/-}-$bin-$p.log
        timeout 60 $B/$bin bench --kernel $k --size $s --devices $d --warmup 3 --reps 3 > $f 2>&1
        echo "$k $d $bin p$p $(grep -E 'median of' $f | tail -1 | cut -c1-120)" >> $R/summary.txt
      done
    done
  done
done
(cd $R && tar czf logs.tgz *.log && rm -f *.log)
