#!/bin/bash
# Tiles A/B: `coexec-old` (main before tiles) against `coexec` (2-D kernels
# mandelbrot, matmul and ray take tiles). Each cell a fresh process
# (profiles off): the first run (cold) and the median of 3 warm runs.
# Interleaved old/new; stops starting processes after 220 s.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # bin devices kernel size rep
  [ $(( $(date +%s) - START )) -gt 220 ] && return
  local b=$1 d=$2 k=$3 s=$4 rep=$5
  local n=$k-$s-$d-$b-$rep
  timeout 30 $b bench --kernel $k --size $s --devices $d --warmup 0 --reps 4 --json > $R/$n.json 2>$R/$n.err
  python3 -c "import json;d=json.load(open('$R/$n.json'));t=d['times_s'];print('$n', 'first', round(d['first_s']*1e3,3), 'warm_med', round(sorted(t[1:])[len(t[1:])//2]*1e3,3), 'cpu_items_first', d['first_cpu_items'], 'cpu_items_last', d['cpu_items'], 'ok', d['verified'])" >> $R/summary.txt 2>/dev/null || echo "$n failed: $(tail -c 300 $R/$n.err)" >> $R/summary.txt
  [ -s $R/$n.err ] || rm -f $R/$n.err
}
for rep in 1 2; do
for ks in "mandelbrot:4096x4096" "ray:4096x4096" "matmul:4096x4096" "ray:8192x8192" "matmul:8192x8192"; do
  k=${ks%%:*}; s=${ks#*:}
  for b in coexec coexec-old; do run $b gpu $k $s $rep; run $b all $k $s $rep; done
done
done
echo done $(( $(date +%s) - START )) s >> $R/summary.txt
