#!/bin/bash
# The seed kernels through coexec and through OpenCL (EngineCL) on one lent
# machine, in one call: coexec GPU alone (static) and co-executed (HGuided)
# at EngineCL's sizes, two fresh processes each (first run, then the median
# of 3 after 2 warm-ups; profiles off); then EngineCL's GPU-alone runs.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
SZ="saxpy:2^26 mandelbrot:8192x8192 gaussian:8192x8192 matmul:4096 taylor:16776960 binomial:2^22 nbody:196608 ray:4096x4096 rap:2^21"
for rep in 1 2; do for ks in $SZ; do
  k=${ks%%:*}; s=${ks#*:}
  for d in gpu all; do
    [ $(( $(date +%s) - START )) -gt 200 ] && break 3
    sch=hguided; [ $d = gpu ] && sch=static
    n=$k-$d-$rep
    timeout 60 coexec bench --kernel $k --size $s --devices $d --scheduler $sch --warmup 2 --reps 3 --json > /tmp/$n.json 2>/tmp/$n.err
    python3 -c "import json;d=json.load(open('/tmp/$n.json'));print('coexec $n first',round(d['first_s']*1e3,2),'warm',round(d['time_s']*1e3,2),'memory',d['memory'],'ok',d['verified'])" >> $R/summary.txt 2>&1 || echo "coexec $n FAILED $(tail -c 200 /tmp/$n.err)" >> $R/summary.txt
  done
done; done
echo "coexec done at $(( $(date +%s) - START )) s" >> $R/summary.txt
left=$(( 520 - ($(date +%s) - START) ))
cp .device/scripts/run-enginecl.sh .peer/ 2>/dev/null
OUT=/tmp/eclout BUDGET=$(( left - 60 )) DYN_CHUNKS=64 CPU_TIMEOUT=20 bash .peer/run-enginecl.sh .peer > /tmp/ecl.log 2>&1
cat /tmp/eclout/enginecl/summary.txt >> $R/summary.txt 2>/dev/null || tail -20 /tmp/ecl.log >> $R/summary.txt
cp /tmp/eclout/enginecl/results.jsonl $R/ 2>/dev/null
