#!/bin/bash
# Cold first runs (a fresh process each, profiles off): GPU alone and both,
# with the co-executed first run's package trace. Stops starting processes
# after 200 s; results go to $OUT as they come.
# Run from the repository root on the device, after `source .device/env.sh`.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # name devices kernel size [extra args]
  [ $(( $(date +%s) - START )) -gt 200 ] && return
  local n=$1 d=$2 k=$3 s=$4
  sz=""; [ -n "$s" ] && sz="--size $s"
  timeout 20 coexec bench --kernel $k $sz --devices $d --warmup 0 --reps 3 --json $5 > $R/$n.json 2>/dev/null
  python3 -c "import json;d=json.load(open('$R/$n.json'));print('$n', round(d['first_s']*1e3,3), d['first_cpu_items'], d.get('time_s'))" >> $R/summary.txt 2>&1
}
for rep in 1 2; do
for ks in "collatz:2^23" "spmv:2^21" "histogram:2^22" "gather:2^23" "taylor:16776960" "jacobi:8192x4096" "mandelbrot:4096x4096" "matmul:4096x4096" "ray:4096x4096"; do
  k=${ks%%:*}; s=${ks#*:}; tag=$k${s:+-$s}
  run "$tag-gpu-$rep" gpu $k "$s"
  run "$tag-all-$rep" all $k "$s" "--trace $R/$tag-all-$rep.trace --trace-first"
done
done
echo done $(( $(date +%s) - START )) s >> $R/summary.txt
