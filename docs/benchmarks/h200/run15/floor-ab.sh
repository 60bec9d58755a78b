#!/bin/bash
# An unmeasured GPU rated at least as fast as its cold packages were
# (`coexec`) against as fast as the measured CPU (`coexec-t3`, the code
# before): first runs and warm medians, 2 processes each, interleaved.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # bin kernel size rep
  [ $(( $(date +%s) - START )) -gt 170 ] && return
  local b=$1 k=$2 s=$3 rep=$4
  local n=$k-$s-$b-$rep
  timeout 30 $b bench --kernel $k --size $s --devices all --warmup 0 --reps 6 --json > /tmp/$n.json 2>/dev/null
  python3 -c "import json,statistics as st;d=json.load(open('/tmp/$n.json'));t=d['times_s'];print('$n', 'first', round(d['first_s']*1e3,3), 'warm_med', round(st.median(t[2:])*1e3,3), 'first_cpu', d['first_cpu_items'], 'ok', d['verified'])" >> $R/summary.txt 2>&1
}
for rep in 1 2; do
for ks in "mandelbrot:4096x4096" "mandelbrot:8192x8192" "ray:4096x4096" "matmul:4096x4096" "nbody:196608" "jacobi:8192x4096" "collatz:2^23" "gather:2^23" "spmv:2^21" "histogram:2^22"; do
  k=${ks%%:*}; s=${ks#*:}
  run coexec $k $s $rep; run coexec-t3 $k $s $rep
done
done
echo "done $(( $(date +%s) - START )) s" >> $R/summary.txt
