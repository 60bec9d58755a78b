#!/bin/bash
# First-run traces (fresh processes, profiles off) of untiled kernels where
# the GPU is far faster, co-executed, beside the GPU alone's first runs.
R=$OUT; export COEXEC_PROFILE=off
for k in spmv:2^21 histogram:2^22 mandelbrot:4096x4096; do
  for i in 1 2; do
    n=${k%%:*}-$i
    COEXEC_LOG=coexec_engine::exec::gpu=trace timeout 40 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 1 --reps 1 --json --trace-first --trace $R/$n.trace > /tmp/$n.json 2>/tmp/$n.log
    python3 -c "
import json,re;d=json.load(open('/tmp/$n.json'))
seen=[tuple(round(float(v)) for v in re.findall(r'_us=([0-9.]+)', l)) for l in open('/tmp/$n.log') if 'seen complete' in l]
print('$n all first',round(d['first_s']*1e3,2),'cpu',d['first_cpu_items'],'seen',seen[:8])" >> $R/summary.txt
    timeout 40 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices gpu --warmup 1 --reps 1 --json --trace-first --trace $R/$n-gpu.trace > /tmp/$n-g.json 2>/dev/null
    python3 -c "import json;d=json.load(open('/tmp/$n-g.json'));print('$n gpu first',round(d['first_s']*1e3,2))" >> $R/summary.txt
  done
done
