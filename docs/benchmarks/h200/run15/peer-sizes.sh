#!/bin/bash
# First runs at the sizes of the EngineCL comparison (section 0b2), the
# final code of run 15: GPU alone and co-executed, two processes each.
R=$OUT
export COEXEC_PROFILE=off
for rep in 1 2; do for ks in "mandelbrot:8192x8192" "nbody:196608" "ray:4096x4096" "matmul:4096x4096"; do
  k=${ks%%:*}; s=${ks#*:}
  for d in gpu all; do
    timeout 30 coexec bench --kernel $k --size $s --devices $d --warmup 0 --reps 3 --json > /tmp/x.json 2>/dev/null
    python3 -c "import json;d=json.load(open('/tmp/x.json'));print('$k-$s-$d-$rep', 'first', round(d['first_s']*1e3,3), 'runs', [round(x*1e3,2) for x in d['times_s']], 'first_cpu', d['first_cpu_items'], 'ok', d['verified'])" >> $R/cells.txt 2>&1
  done
done; done
