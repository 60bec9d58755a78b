#!/bin/bash
# spmv on CPU + 2 GPUs: a process either runs the GPUs (about 1.7 ms) or
# lets the CPU take most rows (7-9 ms). The learner's lines of eight fresh
# processes per device set, HGuided without hints, profiles off.
R=$OUT; B=.device/bin; export COEXEC_PROFILE=off COEXEC_LOG=coexec_engine::learn=debug
$B/coexec info > $R/info.txt 2>&1; nproc >> $R/info.txt
for d in cpu,gpu0,gpu1 cpu,gpu0; do
  for p in 1 2 3 4 5 6 7 8; do
    f=$R/spmv-${d//,/-}-$p.log
    timeout 60 $B/coexec bench --kernel spmv --size 2^21 --devices $d --warmup 8 --reps 3 > $f 2>&1
    echo "$d p$p $(grep -E 'median of' $f | tail -1)" >> $R/summary.txt
  done
done
