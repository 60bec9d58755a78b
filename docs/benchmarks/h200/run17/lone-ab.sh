#!/bin/bash
# A lone GPU cutting its run where downloads overlap compute (coexec)
# against main before it (coexec-old): the GPU engine alone and all
# devices (the learner's GPU-alone runs), 3 warm-ups and 10 runs,
# processes interleaved, profiles off.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
one() { # name, binary, kernel, size, devices
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-250} ] && return
  timeout 40 $2 bench --kernel $3 --size $4 --devices $5 --warmup 3 --reps 10 --json > /tmp/$1.json 2>/tmp/$1.err
  python3 -c "
import json;d=json.load(open('/tmp/$1.json'))
print('$1','first',round(d['first_s']*1e3,2),'med',round(d['time_s']*1e3,3),'pk',[p['packages'] for p in d['per_device']],'cpu',d['cpu_items'],'ok',d['verified'])" >> $R/summary.txt 2>&1 || echo "$1 FAILED $(tail -c 300 /tmp/$1.err)" >> $R/summary.txt
}
for rep in 1 2 3; do for ks in ${KS:-mandelbrot:4096x4096 jacobi:8192x4096 gather:2^23 histogram:2^22 spmv:2^21 collatz:2^23}; do
  for d in gpu all; do for b in coexec coexec-old; do one ${ks%%:*}-$d-$b-$rep $b ${ks%%:*} ${ks#*:} $d; done; done
done; done
