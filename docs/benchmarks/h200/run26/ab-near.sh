#!/bin/bash
# A/B of the first runs' near rule on one H200 (15 CPU workers): jacobi and
# gather, HGuided without hints, profiles off, three warm-ups and the
# median of five (as he_bench's warm figure), four interleaved fresh
# processes per binary, with the learner's lines.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug
for spec in jacobi:8192x4096 gather:2^23 spmv:2^21; do
  k=${spec%%:*}; s=${spec#*:}
  for p in 1 2 3 4; do
    for bin in coexec coexec-old; do
      f=$R/$k-$bin-$p.log
      timeout 60 $B/$bin bench --kernel $k --size $s --devices all --warmup 3 --reps 5 > $f 2>&1
      echo "$k $bin p$p $(grep -E 'median of' $f | tail -1 | cut -c1-110)" >> $R/summary.txt
    done
  done
done
(cd $R && tar czf logs.tgz *.log && rm -f *.log)
