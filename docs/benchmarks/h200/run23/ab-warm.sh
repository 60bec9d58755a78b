#!/bin/bash
# A/B of warm runs on all devices (HGuided, no hints, profiles off):
# the binaries of BINS (coexec and coexec-old by default), PROCS interleaved processes each of 3 warm-ups
# and 10 runs (the median), with the GPU alone (dynamic:4, coexec) once per
# kernel as the reference. Every run is verified by the bench.
R=$OUT; export COEXEC_PROFILE=off; START=$(date +%s)
for spec in ${SPECS:-jacobi:8192x4096 histogram:2^22 spmv:2^21}; do
  k=${spec%%:*}; s=${spec#*:}
  COEXEC_TRANSFER_QUEUE=dedicated timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices gpu --scheduler dynamic:4 --warmup 3 --reps 10 --json > /tmp/o.json 2>/tmp/o.err
  python3 -c "import json;j=json.load(open('/tmp/o.json'));print(f\"$k gpu-alone warm {j['time_s']*1e3:.3f} ms ok {j['verified']}\")" >> $R/summary.txt
  for i in $(seq ${PROCS:-3}); do
    for b in ${BINS:-coexec coexec-old}; do
      [ $(( $(date +%s) - START )) -gt ${LIMIT:-400} ] && break 3
      timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 10 --json > /tmp/o.json 2>/tmp/o.err
      python3 - $k $b <<'PY' >> $R/summary.txt
import json,sys
k,b=sys.argv[1:3]
try:
    j=json.load(open('/tmp/o.json'))
except Exception:
    print(k,b,'FAILED',open('/tmp/o.err').read()[-300:]); sys.exit()
ts=sorted(j['times_s'])
print(f"{k:10s} {b:10s} warm {j['time_s']*1e3:7.3f} ms (min {ts[0]*1e3:.3f} max {ts[-1]*1e3:.3f}) cpu_items {j['cpu_items']} first {j['first_s']*1e3:.3f} ok {j['verified']}")
PY
    done
  done
done
