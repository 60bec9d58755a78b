#!/bin/bash
# A/B of cold first runs (a fresh process each, profiles off): coexec
# (footprints declared by rows and items, Footprint::Offsets) against
# coexec-old, on all devices and on the GPU alone, interleaved. Each
# process: its first run (cold) and the median of 5 after WARMUP (3) warm-ups.
R=$OUT; export COEXEC_PROFILE=off; START=$(date +%s)
for spec in ${SPECS:-spmv:2^21 histogram:2^22 collatz:2^23}; do
  k=${spec%%:*}; s=${spec#*:}
  for i in $(seq ${PROCS:-4}); do
    for b in coexec coexec-old; do
      for d in all gpu; do
        [ $(( $(date +%s) - START )) -gt ${LIMIT:-420} ] && break 4
        timeout 60 .device/bin/$b bench --kernel $k --size $s --devices $d --warmup ${WARMUP:-3} --reps 5 --json > /tmp/o.json 2>/tmp/o.err
        python3 - "$k" "$b" "$d" <<'PY' >> $R/summary.txt
import json,sys
k,b,d=sys.argv[1:4]
try:
    j=json.load(open('/tmp/o.json'))
except Exception as e:
    print(k,b,d,'FAILED',open('/tmp/o.err').read()[-300:]); sys.exit()
up=sum(p.get('upload_bytes',0) for p in j['per_device'])
print(f"{k} {b:10s} {d:3s} first {j['first_s']*1e3:7.3f} ms warm {j['time_s']*1e3:7.3f} ms ok {j['verified']}")
PY
      done
    done
  done
done
