#!/bin/bash
# Every HGuided claim of a kernel's runs logged (size by the formula, after
# the floors, after the guard; the device's cost), with the package log.
R=$OUT; export COEXEC_PROFILE=off
K=${KERNEL:-jacobi}; S=${SIZE:-8192x4096}
for i in 1 2; do
  COEXEC_LOG=coexec_engine::sched::plan=trace,coexec_engine::learn=debug timeout 60 coexec bench --kernel $K --size $S --warmup 3 --reps 3 --log > /tmp/c$i.log 2>/tmp/c$i.err
  head -3 /tmp/c$i.log >> $R/summary.txt
  gzip -c /tmp/c$i.err > $R/claims-$i.err.gz
done
