#!/bin/bash
# Why a CPU's first run is 3-4 times its warm runs on the H200 machine:
# the CPU alone, cold (first_s) and warm, through the engine's workers and
# through rayon (no coexec), two fresh processes each, the first run's
# packages traced; the machine's CPU frequency settings.
R=$OUT; export COEXEC_PROFILE=off
row() { python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print("first %.3f ms warm %.3f ms" % (r["first_s"]*1e3, r["time_s"]*1e3))'; }
for spec in collatz:2^23 mandelbrot:4096x4096; do
  k=${spec%%:*}; s=${spec#*:}
  for p in 1 2; do
    echo "$k cpu p$p $(coexec bench --kernel $k --size $s --devices cpu --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
    echo "$k rayon p$p $(coexec bench --kernel $k --size $s --devices cpu --cpu-impl rayon --warmup 1 --reps 3 --json | row)" >> $R/summary.txt
  done
  coexec bench --kernel $k --size $s --devices cpu --warmup 1 --reps 1 --trace $R/$k-cpu.json --trace-first > $R/$k-cpu.log 2>&1
done
cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor >> $R/summary.txt 2>&1
lscpu | head -20 >> $R/summary.txt
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
