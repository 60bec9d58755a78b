#!/bin/bash
# All devices (HGuided, profiles off): the transfer queue per run (auto:
# co-executed runs on the compute queue) against every run on the
# dedicated transfer queue (COEXEC_TRANSFER_QUEUE=dedicated), one binary,
# PROCS interleaved processes each: the first run (cold) and the median of
# 5 after 3 warm-ups.
R=$OUT; export COEXEC_PROFILE=off
for spec in ${SPECS:-mandelbrot:4096x4096 gather:2^23 collatz:2^23 jacobi:8192x4096 histogram:2^22}; do
  k=${spec%%:*}; s=${spec#*:}
  for i in $(seq ${PROCS:-3}); do
    for q in auto dedicated; do
      COEXEC_TRANSFER_QUEUE=$q timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/o.json 2>/tmp/o.err
      python3 - $k $q <<'PY' >> $R/summary.txt
import json,sys
k,q=sys.argv[1:3]
try:
    j=json.load(open('/tmp/o.json'))
except Exception:
    print(k,q,'FAILED',open('/tmp/o.err').read()[-300:]); sys.exit()
print(f"{k:10s} {q:9s} first {j['first_s']*1e3:7.3f} ms cpu {j['first_cpu_items']} warm {j['time_s']*1e3:7.3f} ms cpu {j['cpu_items']} ok {j['verified']}")
PY
    done
  done
done
