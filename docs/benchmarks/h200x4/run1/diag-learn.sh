#!/bin/bash
# The learner's choices on a 4-GPU host: each run's configuration, what the
# model predicted and measured, and each device's share, for HGuided
# without hints (profiles off), 6 warm-ups and 3 timed runs per process.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug
for spec in jacobi:8192x4096 taylor:16776960 matmul:4096x4096 gather:2^23 mandelbrot:4096x4096; do
  k=${spec%%:*}; s=${spec#*:}
  for d in all gpu cpu,gpu0,gpu1; do
    echo "=== $k $s $d" >> $R/learn-$k.log
    timeout 60 $B/coexec bench --kernel $k --size $s --devices $d --warmup 6 --reps 3 >> $R/learn-$k.log 2>&1
    echo "$k $d $(grep -E 'median of' $R/learn-$k.log | tail -1)" >> $R/summary.txt
  done
done
