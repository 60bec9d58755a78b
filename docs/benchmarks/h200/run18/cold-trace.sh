#!/bin/bash
# First runs co-executed (CPU + GPU, HGuided, profiles off), traced: where
# a cold run's time goes. Three processes per kernel; the traces are the
# raw output.
R=$OUT; export COEXEC_PROFILE=off
for k in ${KS:-mandelbrot:4096x4096 collatz:2^23 histogram:2^22 spmv:2^21}; do for i in 1 2 3; do
  n=${k%%:*}-$i
  timeout 60 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 0 --reps 1 --json --trace-first --trace $R/$n.trace > /tmp/$n.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/$n.json'))
print('$n first',round(d['first_s']*1e3,2),'cpu',d['first_cpu_items'],'ok',d['verified'])" >> $R/summary.txt
done; done
ls -la $R >> $R/summary.txt
