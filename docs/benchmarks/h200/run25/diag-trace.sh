#!/bin/bash
# A fresh process's first run (profiles off) as a package trace: per spec,
# PROCS processes on all devices and one of each device alone; the trace
# files (Chrome/Perfetto JSON) and each process's JSON line under $OUT.
R=$OUT; export COEXEC_PROFILE=off
for spec in ${SPECS:-mandelbrot:4096x4096 spmv:2^21 histogram:2^22}; do
  k=${spec%%:*}; s=${spec#*:}
  for d in ${DEVS:-all all gpu}; do
    i=$((i+1))
    timeout 60 .device/bin/${BIN:-coexec} bench --kernel $k --size $s --devices $d --warmup 1 --reps 1 --json --trace $R/$k-$d-$i.json --trace-first > /tmp/o.json 2>/tmp/o.err
    python3 - $k $d $i <<'PY' >> $R/summary.txt
import json,sys
k,d,i=sys.argv[1:4]
try:
    j=json.load(open('/tmp/o.json'))
except Exception:
    print(k,d,i,'FAILED',open('/tmp/o.err').read()[-300:]); sys.exit()
print(f"{k:10s} {d:4s} {i:3s} first {j['first_s']*1e3:7.3f} ms cpu {j.get('first_cpu_items')} ok {j['verified']}")
PY
  done
done
