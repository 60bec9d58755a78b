#!/bin/bash
# The CPU's throughput-only fit and the coverage rule (new) against main
# before them (`coexec-old`) on untiled kernels: HGuided without hints,
# first run and the median of 10 warm runs, 3 processes each, interleaved.
R=$OUT; START=$(date +%s)
export COEXEC_PROFILE=off
for rep in 1 2 3; do
for ks in "jacobi:8192x4096" "spmv:2^21" "histogram:2^22" "gather:2^23"; do
  k=${ks%%:*}; s=${ks#*:}
  for b in coexec coexec-old; do
    [ $(( $(date +%s) - START )) -gt 150 ] && break 3
    n=$k-$b-$rep
    timeout 30 $b bench --kernel $k --size $s --devices all --warmup 3 --reps 10 --json > /tmp/$n.json 2>/dev/null
    python3 -c "import json;d=json.load(open('/tmp/$n.json'));print('$n', 'first', round(d['first_s']*1e3,3), 'warm_med', round(d['time_s']*1e3,3), 'cpu_items', d['cpu_items'], 'ok', d['verified'])" >> $R/summary.txt 2>&1
  done
done
done
for b in coexec coexec-old; do for d in gpu cpu; do
  timeout 30 $b bench --kernel jacobi --size 8192x4096 --devices $d --warmup 3 --reps 10 --json > /tmp/jacobi-$d-$b.json 2>/dev/null
  python3 -c "import json;d=json.load(open('/tmp/jacobi-$d-$b.json'));print('jacobi-$d-$b', 'warm_med', round(d['time_s']*1e3,3))" >> $R/summary.txt 2>&1
done; done
