#!/bin/bash
# A/B of a fresh process's first run on all devices (HGuided, no hints):
# the binaries of BINS (coexec and coexec-old by default), interleaved, PROCS rounds. Per binary and
# kernel, a profile is first written by a warm process (3 warm-ups, 5 runs)
# in a directory of its own; each round then runs, per binary, one process
# with profiles off (cold) and one from that profile (cold + profile). One
# GPU-alone and one CPU-alone cold process per kernel (coexec) as the cold
# baselines. Every run is verified by the bench.
R=$OUT; START=$(date +%s)
line() { python3 - "$@" <<'PY'
import json,sys
k,b,m=sys.argv[1:4]
try:
    j=json.load(open('/tmp/o.json'))
except Exception:
    print(k,b,m,'FAILED',open('/tmp/o.err').read()[-300:]); sys.exit()
up=sum(p.get('upload_bytes',0) for p in j.get('per_device',[]))
print(f"{k:10s} {b:10s} {m:8s} first {j['first_s']*1e3:8.3f} ms cpu_items {j.get('first_cpu_items')} from_profile {j.get('first_from_profile')} ok {j['verified']}")
PY
}
for spec in ${SPECS:-histogram:2^22 spmv:2^21 jacobi:8192x4096}; do
  k=${spec%%:*}; s=${spec#*:}
  for d in gpu cpu; do
    COEXEC_PROFILE=off timeout 60 .device/bin/coexec bench --kernel $k --size $s --devices $d --warmup 0 --reps 1 --json > /tmp/o.json 2>/tmp/o.err
    line $k coexec cold-$d >> $R/summary.txt
  done
  for b in ${BINS:-coexec coexec-old}; do
    mkdir -p /tmp/prof-$b-$k
    COEXEC_CACHE_DIR=/tmp/prof-$b-$k timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/o.json 2>/tmp/o.err
    line $k $b prime >> $R/summary.txt
  done
  for i in $(seq ${PROCS:-4}); do
    for b in ${BINS:-coexec coexec-old}; do
      [ $(( $(date +%s) - START )) -gt ${LIMIT:-500} ] && break 3
      COEXEC_PROFILE=off timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 0 --reps 1 --json > /tmp/o.json 2>/tmp/o.err
      line $k $b cold >> $R/summary.txt
      COEXEC_CACHE_DIR=/tmp/prof-$b-$k timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 0 --reps 1 --json > /tmp/o.json 2>/tmp/o.err
      line $k $b profile >> $R/summary.txt
    done
  done
done
echo "wall $(( $(date +%s) - START )) s" >> $R/summary.txt
