#!/bin/bash
# The final code of run 15 (tiles, throughput-only CPU fits, coverage,
# stealing by speed): he_bench over the comparable set, then the tiled
# kernels' first runs against the GPU alone's. Results under $OUT.
R=$OUT; START=$(date +%s)
HE_REPS=5 HE_COLD=3 timeout 360 python3 scripts/he_bench.py coexec $R/he.json jacobi:8192x4096 spmv:2^21 mandelbrot:4096x4096 histogram:2^22 gather:2^23 collatz:2^23 taylor:16776960 > $R/he.txt 2>&1
export COEXEC_PROFILE=off
for rep in 1 2; do for ks in "ray:4096x4096" "matmul:4096x4096" "ray:8192x8192" "matmul:8192x8192"; do
  [ $(( $(date +%s) - START )) -gt 430 ] && break 2
  k=${ks%%:*}; s=${ks#*:}
  for d in gpu all; do
    timeout 30 coexec bench --kernel $k --size $s --devices $d --warmup 0 --reps 3 --json > /tmp/x.json 2>/dev/null
    python3 -c "import json;d=json.load(open('/tmp/x.json'));print('$k-$s-$d-$rep', 'first', round(d['first_s']*1e3,3), 'runs', [round(x*1e3,2) for x in d['times_s']], 'ok', d['verified'])" >> $R/cells.txt 2>&1
  done
done; done
echo "done $(( $(date +%s) - START )) s" >> $R/cells.txt
