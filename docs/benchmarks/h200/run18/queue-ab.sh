#!/bin/bash
# The transfer queue chosen per run (COEXEC_TRANSFER_QUEUE=auto: a lone
# GPU's runs on the transfer-only queue, cut so that downloads overlap
# compute) against the compute queue for every run (=compute, the
# previous default), one binary: the GPU alone (HGuided, the learner's
# GPU-alone configuration) and all devices (HGuided, the learner), first
# run and warm median (3 warm-ups, 5 runs), processes interleaved,
# profiles off. KS: kernel:size list.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
one() { # queue, kernel, size, devices
  local n=$2-$3-$4-$1-$rep
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-400} ] && return
  COEXEC_TRANSFER_QUEUE=$1 timeout 40 coexec bench --kernel $2 --size $3 --devices $4 --warmup ${WARMUP:-5} --reps 5 --json > /tmp/$n.json 2>/tmp/$n.err
  python3 -c "
import json;d=json.load(open('/tmp/$n.json'));g=[p for p in d['per_device'] if p['kind'].lower()!='cpu']
print('$n','first',round(d['first_s']*1e3,2),'warm',round(d['time_s']*1e3,2),'cpu',d['cpu_items'],'gpk',[p['packages'] for p in g],'ok',d['verified'],'times',' '.join(f'{t*1e3:.2f}' for t in d['times_s']))" >> $R/summary.txt 2>&1 || echo "$n FAILED $(tail -c 300 /tmp/$n.err)" >> $R/summary.txt
}
KS=${KS:-"mandelbrot:4096x4096 histogram:2^22 histogram:2^24 gather:2^23 jacobi:8192x4096 spmv:2^21 collatz:2^23"}
for rep in 1 2; do for ks in $KS; do for dev in ${DEVS:-gpu all}; do for q in auto compute; do one $q ${ks%%:*} ${ks#*:} $dev; done; done; done; done
