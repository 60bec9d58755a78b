#!/bin/bash
# Staged transfers on the H200's transfer-only queue (COEXEC_TRANSFER_QUEUE
# =auto) against the compute queue (=compute, the default before run 16):
# first runs and warm medians (3 warm-ups, 5 runs), interleaved, two fresh
# processes each; co-executed (HGuided) and the GPU alone (static).
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
one() { # queue, kernel, size, devices
  local n=$2-$3-$4-$1-$rep
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-280} ] && return
  local sch=hguided; [ $4 = gpu ] && sch=static
  COEXEC_TRANSFER_QUEUE=$1 timeout 40 coexec bench --kernel $2 --size $3 --devices $4 --scheduler $sch --warmup 3 --reps 5 --json > /tmp/$n.json 2>/tmp/$n.err
  python3 -c "
import json;d=json.load(open('/tmp/$n.json'))
print('$n','first',round(d['first_s']*1e3,3),'warm',round(d['time_s']*1e3,3),'cpu',d['cpu_items'],'ok',d['verified'])" >> $R/summary.txt 2>&1 || echo "$n FAILED $(tail -c 300 /tmp/$n.err)" >> $R/summary.txt
}
KS=${KS:-"ray:4096x4096:all mandelbrot:4096x4096:all matmul:4096:all gaussian:8192x8192:all jacobi:8192x4096:all spmv:2^21:all histogram:2^22:all saxpy:2^26:all jacobi:8192x4096:gpu spmv:2^21:gpu saxpy:2^26:gpu histogram:2^22:gpu"}
for rep in 1 2; do for ks in $KS; do IFS=: read k s d <<< "$ks"; for q in auto compute; do one $q $k $s $d; done; done; done
