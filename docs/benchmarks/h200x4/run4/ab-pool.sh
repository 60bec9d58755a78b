#!/bin/bash
# Pooled costs of identical devices (COEXEC_POOL, on unless 0) on four
# H200s: one binary, pooling on and off in interleaved fresh processes,
# HGuided without hints, profiles off, 6 warm-ups and the median of 3;
# each run's items per device from the last timed run's report.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off
for spec in ${SPECS:-jacobi:8192x4096 taylor:16776960 gather:2^23 collatz:2^23 matmul:4096x4096}; do
  k=${spec%%:*}; s=${spec#*:}
  for d in gpu0,gpu1,gpu2,gpu3 all; do
    for p in $(seq ${PROCS:-2}); do
      for pool in 1 0; do
        out=$(COEXEC_POOL=$pool timeout 60 $B/coexec bench --kernel $k --size $s --devices $d --warmup 6 --reps 3 2>&1)
        t=$(echo "$out" | grep -E 'median of' | tail -1 | grep -oE ': [0-9.]+ s' | tr -d ': s')
        items=$(echo "$out" | grep -E '^  (gpu|cpu)' | awk '{for(i=1;i<=NF;i++) if($i=="items") printf "%s ", $(i+1)}')
        echo "$k $d pool=$pool p$p $t items $items" >> $R/summary.txt
      done
    done
  done
done
