#!/bin/bash
# A CPU's probe held back from a run within one GPU wave (coexec) against
# main before it (coexec-old): first runs (fresh processes, profiles off)
# and warm medians, interleaved, two processes per cell; GPU alone once.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
one() { # binary, kernel, size, devices
  local n=$2-$3-$4-$1-$rep
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-200} ] && return
  timeout 40 $1 bench --kernel $2 --size $3 --devices $4 --warmup 1 --reps 3 --json > /tmp/$n.json 2>/tmp/$n.err
  python3 -c "
import json;d=json.load(open('/tmp/$n.json'))
print('$n','first',round(d['first_s']*1e3,2),'first_cpu',d['first_cpu_items'],'warm',round(d['time_s']*1e3,2),'cpu',d['cpu_items'],'ok',d['verified'])" >> $R/summary.txt 2>&1 || echo "$n FAILED $(tail -c 300 /tmp/$n.err)" >> $R/summary.txt
}
KS="nbody:196608 nbody:65536 ray:4096x4096 mandelbrot:4096x4096 matmul:4096x4096 jacobi:8192x4096 saxpy:2^20"
for rep in 1 2; do for ks in $KS; do for b in coexec coexec-old; do one $b ${ks%%:*} ${ks#*:} all; done; done; done
rep=g; for ks in $KS; do one coexec ${ks%%:*} ${ks#*:} gpu; done
