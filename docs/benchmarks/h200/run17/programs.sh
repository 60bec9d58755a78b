#!/bin/bash
# Programs (k-means, CG) against the best single device, lazy and eager
# host coherence, profiles off; then a cold spmv run's GPU packages.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
B=.device/bin
for coh in lazy eager; do
  for d in all gpu cpu; do
    [ $coh = eager ] && [ $d = cpu ] && continue
    [ $(( $(date +%s) - START )) -gt ${LIMIT:-200} ] && break
    echo "== $coh $d" >> $R/summary.txt
    COEXEC_HOST_COHERENCE=$coh timeout 60 $B/kmeans 16777216 20 $d 2>&1 | grep -E "time per|verified|FAIL" >> $R/summary.txt
    COEXEC_HOST_COHERENCE=$coh timeout 60 $B/cg 4096 30 $d 2>&1 | grep -E "time per|verified|FAIL" >> $R/summary.txt
  done
done
for i in 1 2; do
  COEXEC_LOG=coexec_engine::exec::gpu=trace timeout 40 coexec bench --kernel spmv --size 2^21 --devices all --warmup 1 --reps 1 --json --trace-first --trace /tmp/s.trace > /tmp/s.json 2>/tmp/s.log
  python3 - <<'PY' >> $R/summary.txt
import json,re
d=json.load(open('/tmp/s.json'))
ev=[]
for l in open('/tmp/s.log'):
    if 'recorded and submitted' in l: ev.append('sub'+re.search(r'units=(\d+)',l).group(1))
    if 'seen complete' in l: ev.append('done'+str(tuple(round(float(v)) for v in re.findall(r'_us=([0-9.]+)', l))))
print('spmv cold all',round(d['first_s']*1e3,2),'cpu',d['first_cpu_items'],' '.join(ev[:30]))
PY
  cp /tmp/s.trace $R/spmv-$i.trace
done
