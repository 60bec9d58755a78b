#!/bin/bash
# Where a cold first run's GPU start goes: one fresh process per kernel and
# device set (profiles off) with the engine's trace, timestamps kept: the
# learner's line (the run's start), each GPU package's upload, recording,
# submission and completion, the run's steps.
R=$OUT; export COEXEC_PROFILE=off
for spec in ${SPECS:-jacobi:8192x4096 histogram:2^22 mandelbrot:4096x4096}; do
  k=${spec%%:*}; s=${spec#*:}
  for d in ${DEVS:-all gpu}; do
    COEXEC_LOG=coexec_engine=trace timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices $d --warmup 0 --reps 1 --log > /tmp/o.log 2>/tmp/o.err
    echo "== $k $d" >> $R/summary.txt
    awk '/^first run/{exit} {print}' /tmp/o.err | grep -v "sched::plan: an HGuided claim device=0" | sed -E 's/^2026-[0-9-]*T[0-9]*:[0-9]*://; s/coexec_engine:://' | head -${LINES_EACH:-24} | cut -c1-330 >> $R/summary.txt
    grep "^first run" /tmp/o.err >> $R/summary.txt
  done
done
