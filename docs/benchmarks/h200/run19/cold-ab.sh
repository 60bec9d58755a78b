#!/bin/bash
# First runs only (a fresh process each, profiles off), the step (coexec)
# against main before it (coexec-old), N interleaved processes per kernel
# of KS; medians printed at the end.
R=$OUT; export COEXEC_PROFILE=off; N=${N:-8}
KS=${KS:-"mandelbrot:4096x4096 jacobi:8192x4096 collatz:2^23 gather:2^23 histogram:2^22 spmv:2^21"}
for ks in $KS; do for rep in $(seq 1 $N); do for b in coexec coexec-old; do
  timeout 40 $b bench --kernel ${ks%%:*} --size ${ks#*:} --devices all --warmup 1 --reps 1 --json > /tmp/c.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/c.json'));print('${ks%%:*}','$b',round(d['first_s']*1e3,3),d['first_cpu_items'],d['verified'])" >> $R/runs.txt 2>&1
done; done; done
python3 - "$R/runs.txt" > $R/summary.txt <<'PY'
import sys, statistics, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, b, ms, *_ = line.split()
    t[(k, b)].append(float(ms))
for (k, b), v in sorted(t.items()):
    print(f"{k:<11} {b:<11} median {statistics.median(v):7.2f} ms  runs {' '.join(f'{x:.2f}' for x in v)}")
PY
