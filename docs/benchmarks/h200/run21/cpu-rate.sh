#!/bin/bash
# The CPU's learned rate against its delivered one: jacobi with HGuided on
# the CPU alone and on all devices, every claim logged (the device's cost)
# with the package log.
R=$OUT; export COEXEC_PROFILE=off
K=${KERNEL:-jacobi}; S=${SIZE:-8192x4096}
n=0
for d in cpu all cpu all; do
  n=$((n+1))
  COEXEC_LOG=coexec_engine::sched::plan=trace timeout 60 coexec bench --kernel $K --size $S --devices $d --warmup 3 --reps 3 --log > /tmp/r$n.log 2>/tmp/r$n.err
  echo "== $d" >> $R/summary.txt; head -4 /tmp/r$n.log >> $R/summary.txt
  gzip -c /tmp/r$n.err > $R/rate-$n-$d.err.gz
done
