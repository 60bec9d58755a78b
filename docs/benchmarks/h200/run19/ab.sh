#!/bin/bash
# The step under test (coexec) against main before it (coexec-old): first
# runs and warm medians (3 warm-ups, 5 runs), processes interleaved,
# profiles off; then one traced first run of the step per kernel of TKS
# (traces packed in traces.tar.xz). KS, TKS: kernel:size lists.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
one() { # binary, kernel, size, devices
  local n=$2-$3-$4-$1-$rep
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-420} ] && return
  timeout 40 $1 bench --kernel $2 --size $3 --devices $4 --warmup 3 --reps 5 --json > /tmp/$n.json 2>/tmp/$n.err
  python3 -c "
import json;d=json.load(open('/tmp/$n.json'))
print('$n','first',round(d['first_s']*1e3,2),'first_cpu',d['first_cpu_items'],'warm',round(d['time_s']*1e3,2),'cpu',d['cpu_items'],'ok',d['verified'])" >> $R/summary.txt 2>&1 || echo "$n FAILED $(tail -c 300 /tmp/$n.err)" >> $R/summary.txt
}
KS=${KS:-"mandelbrot:4096x4096 collatz:2^23 gather:2^23 jacobi:8192x4096 spmv:2^21 histogram:2^22"}
for rep in 1 2 3; do for ks in $KS; do for b in ${BINS:-coexec coexec-old}; do one $b ${ks%%:*} ${ks#*:} all; done; done; done
for ks in ${GPU_KS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23}; do for rep in 1 2; do one coexec ${ks%%:*} ${ks#*:} gpu; done; done
mkdir -p /tmp/tr
for k in ${TKS:-mandelbrot:4096x4096 collatz:2^23 jacobi:8192x4096 spmv:2^21}; do
  n=${k%%:*}
  timeout 60 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 0 --reps 1 --json --trace-first --trace /tmp/tr/$n.trace > /tmp/tr/$n.json 2>/dev/null
done
tar cJf $R/traces.tar.xz -C /tmp/tr .
