#!/bin/bash
# First-run traces (fresh processes, profiles off) of the tiled kernels,
# co-executed, beside the GPU alone's first runs.
R=$OUT; export COEXEC_PROFILE=off
for k in ray:4096x4096 mandelbrot:4096x4096; do
  for i in 1 2; do
    n=${k%%:*}-$i
    timeout 40 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 1 --reps 1 --json --trace-first --trace $R/$n.trace > /tmp/$n.json 2>/dev/null
    python3 -c "import json;d=json.load(open('/tmp/$n.json'));print('$n all first',round(d['first_s']*1e3,2),'ok',d['verified'])" >> $R/summary.txt
    timeout 40 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices gpu --warmup 1 --reps 1 --json > /tmp/$n-g.json 2>/dev/null
    python3 -c "import json;d=json.load(open('/tmp/$n-g.json'));print('$n gpu first',round(d['first_s']*1e3,2),'ok',d['verified'])" >> $R/summary.txt
  done
done
