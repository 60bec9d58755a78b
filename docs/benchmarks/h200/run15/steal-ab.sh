#!/bin/bash
# A GPU thief that takes its share of a worker's remainder (`coexec`)
# against halves (`coexec-t1`, tiles only) and main before tiles
# (`coexec-old`): cold first runs of the tiled kernels, then the traces of
# one cold co-executed first run each. Results under $OUT as they come.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # bin devices kernel size rep
  [ $(( $(date +%s) - START )) -gt 120 ] && return
  local b=$1 d=$2 k=$3 s=$4 rep=$5
  local n=$k-$s-$d-$b-$rep
  timeout 30 $b bench --kernel $k --size $s --devices $d --warmup 0 --reps 3 --json > /tmp/$n.json 2>/dev/null
  python3 -c "import json;d=json.load(open('/tmp/$n.json'));t=d['times_s'];print('$n', 'first', round(d['first_s']*1e3,3), 'runs', [round(x*1e3,2) for x in t], 'cpu_items', d['times_cpu_items'], 'first_cpu', d['first_cpu_items'], 'ok', d['verified'])" >> $R/summary.txt 2>&1
}
for rep in 1 2; do
for ks in "mandelbrot:4096x4096" "ray:4096x4096" "matmul:4096x4096" "ray:8192x8192"; do
  k=${ks%%:*}; s=${ks#*:}
  [ $rep = 1 ] && run coexec gpu $k $s 1
  run coexec all $k $s $rep; run coexec-t1 all $k $s $rep
done
done
mkdir -p $R/traces
for k in mandelbrot ray; do
  timeout 30 coexec bench --kernel $k --size 4096x4096 --devices all --warmup 0 --reps 1 --trace $R/traces/$k.json --trace-first > /dev/null 2>&1
done
echo "done $(( $(date +%s) - START )) s" >> $R/summary.txt
