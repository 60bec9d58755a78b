#!/bin/bash
# The GPU stealing as late as it claims, with packages in flight (`coexec`),
# against stealing only with nothing in flight (`coexec-t2`): first run and
# warm runs, tiled and untiled kernels, 2 processes each, interleaved.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # bin devices kernel size rep
  [ $(( $(date +%s) - START )) -gt 150 ] && return
  local b=$1 d=$2 k=$3 s=$4 rep=$5
  local n=$k-$s-$d-$b-$rep
  timeout 30 $b bench --kernel $k --size $s --devices $d --warmup 0 --reps 8 --json > /tmp/$n.json 2>/dev/null
  python3 -c "import json,statistics as st;d=json.load(open('/tmp/$n.json'));t=d['times_s'];print('$n', 'first', round(d['first_s']*1e3,3), 'warm_med', round(st.median(t[3:])*1e3,3), 'runs', [round(x*1e3,2) for x in t], 'first_cpu', d['first_cpu_items'], 'ok', d['verified'])" >> $R/summary.txt 2>&1
}
for rep in 1 2; do
for ks in "mandelbrot:4096x4096" "ray:4096x4096" "matmul:4096x4096" "jacobi:8192x4096" "spmv:2^21" "histogram:2^22" "gather:2^23" "collatz:2^23"; do
  k=${ks%%:*}; s=${ks#*:}
  run coexec all $k $s $rep; run coexec-t2 all $k $s $rep
done
done
echo "done $(( $(date +%s) - START )) s" >> $R/summary.txt
