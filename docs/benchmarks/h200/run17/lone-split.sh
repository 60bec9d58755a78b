#!/bin/bash
# A lone staged GPU: one package against the range cut in 2, 4, 8 packages
# (Dynamic), on the compute queue and on the transfer-only queue; warm
# medians (3 warm-ups, 10 runs), the last run's transfer figures.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
for k in ${KS:-histogram:2^22 histogram:2^24 mandelbrot:4096x4096 gather:2^23 jacobi:8192x4096}; do
  for xq in compute auto; do
    for s in hguided dynamic:2 dynamic:4 dynamic:8; do
      [ $(( $(date +%s) - START )) -gt ${LIMIT:-150} ] && break 3
      COEXEC_TRANSFER_QUEUE=$xq timeout 40 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices gpu --scheduler $s --warmup 3 --reps 10 --json > /tmp/x.json 2>/dev/null
      python3 -c "
import json;d=json.load(open('/tmp/x.json'));p=d['per_device'][0]
print('$k $xq $s med',round(d['time_s']*1e3,3),'busy',round(p['busy_s']*1e3,3),'gbusy',round((p['gpu_busy_s'] or 0)*1e3,3),'xfer',round(p['transfer_s']*1e3,3),'settled',round(p['settled_s']*1e3,3),'pk',p['packages'])" >> $R/summary.txt 2>&1
    done
  done
done
