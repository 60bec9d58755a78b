#!/bin/bash
# Tiles and throughput-only CPU fits: the tiled 2-D kernels cold and warm
# (new binary against `coexec-old`), then he_bench over the comparable set
# with the new binary. Results under $OUT as they come.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # bin devices kernel size rep
  [ $(( $(date +%s) - START )) -gt 100 ] && return
  local b=$1 d=$2 k=$3 s=$4 rep=$5
  local n=$k-$s-$d-$b-$rep
  timeout 30 $b bench --kernel $k --size $s --devices $d --warmup 0 --reps 6 --json > $R/$n.json 2>$R/$n.err
  python3 -c "import json;d=json.load(open('$R/$n.json'));t=d['times_s'];print('$n', 'first', round(d['first_s']*1e3,3), 'runs', [round(x*1e3,2) for x in t], 'cpu_items', d['times_cpu_items'], 'ok', d['verified'])" >> $R/summary.txt 2>/dev/null || echo "$n failed: $(tail -c 300 $R/$n.err)" >> $R/summary.txt
  [ -s $R/$n.err ] || rm -f $R/$n.err
}
for ks in "mandelbrot:4096x4096" "ray:4096x4096" "matmul:4096x4096" "ray:8192x8192" "matmul:8192x8192"; do
  k=${ks%%:*}; s=${ks#*:}
  run coexec gpu $k $s 1; run coexec all $k $s 1; run coexec-old all $k $s 1; run coexec all $k $s 2
done
echo "cells done $(( $(date +%s) - START )) s" >> $R/summary.txt
HE_REPS=5 HE_COLD=3 timeout 330 python3 scripts/he_bench.py coexec $R/he.json jacobi:8192x4096 spmv:2^21 mandelbrot:4096x4096 histogram:2^22 gather:2^23 collatz:2^23 taylor:16776960 > $R/he.txt 2>&1
echo "he done $(( $(date +%s) - START )) s" >> $R/summary.txt
