#!/bin/bash
# A/B of the first runs' near rule (a device never run alone, predicted
# within a quarter of a run of the first co-executed sample, is tried once
# before co-executing is confirmed) on CPU + 4 GPUs, HGuided without hints,
# profiles off: spmv (where processes stayed co-executing at 4-5x the GPU
# alone) in six fresh processes per binary with the learner's lines, then
# the other kernels in two processes per binary, interleaved.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off
$B/coexec info > $R/info.txt 2>&1; nproc >> $R/info.txt
for p in 1 2 3 4 5 6; do
  for bin in coexec coexec-old; do
    f=$R/spmv-$bin-$p.log
    COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/$bin bench --kernel spmv --size 2^21 --devices all --warmup 6 --reps 3 > $f 2>&1
    echo "spmv $bin p$p $(grep -E 'median of' $f | tail -1 | cut -c1-160)" >> $R/summary.txt
  done
done
for spec in jacobi:8192x4096 taylor:16776960 matmul:4096x4096 gather:2^23 collatz:2^23 mandelbrot:4096x4096 histogram:2^22 nbody:262144; do
  k=${spec%%:*}; s=${spec#*:}
  for p in 1 2; do
    for bin in coexec coexec-old; do
      line=$(timeout 60 $B/$bin bench --kernel $k --size $s --devices all --warmup 6 --reps 3 2>&1 | grep -E 'median of' | tail -1 | cut -c1-140)
      echo "$k $bin p$p $line" >> $R/summary.txt
    done
  done
done
# (Few files come back from the machine: the logs as one archive.)
(cd $R && tar czf logs.tgz *.log && rm -f *.log)
