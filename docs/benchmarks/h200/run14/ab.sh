#!/bin/bash
# Cold first runs (a fresh process each, profiles off) of the GPU alone,
# the CPU alone (comparable kernels only: the CPU alone takes seconds on
# the others) and both; `first_s` and the CPU's items. Stops starting new
# processes after 230 s; results go to $OUT/summary.txt as they come.
# Run from the repository root on the device, after `source .device/env.sh`.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
run() { # name devices kernel size [extra args]
  [ $(( $(date +%s) - START )) -gt 230 ] && return
  local n=$1 d=$2 k=$3 s=$4
  sz=""; [ -n "$s" ] && sz="--size $s"
  timeout 20 coexec bench --kernel $k $sz --devices $d --warmup 0 --reps 1 --json $5 > /tmp/$n.json 2>/dev/null
  python3 -c "import json;d=json.load(open('/tmp/$n.json'));print('$n', round(d['first_s']*1e3,3), d['first_cpu_items'])" >> $R/summary.txt 2>&1
}
run mtrace all mandelbrot 4096x4096 "--trace $R/mt.json --trace-first"
for rep in 1 2; do
for ks in "mandelbrot:4096x4096" "jacobi:8192x4096" "matmul:4096x4096" "ray:4096x4096" "spmv:2^21" "histogram:2^22" "gather:2^23" "taylor:16776960" "nbody:"; do
  k=${ks%%:*}; s=${ks#*:}; tag=$k${s:+-$s}
  run "$tag-gpu-$rep" gpu $k "$s"
  case $k in jacobi|spmv|histogram|gather) run "$tag-cpu-$rep" cpu $k "$s";; esac
  run "$tag-all-$rep" all $k "$s"
done
done
