#!/bin/bash
# Where a learner's GPU-alone run loses to the GPU engine alone (the 0.98
# floor, run 16: histogram 0.83, spmv 0.97, mandelbrot 0.976). Each kernel:
# GPU engine alone and all devices under HGuided, 3 warm-ups, median of 10,
# per-device figures of the last run; then the learner's decisions.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
BINS=${BINS:-coexec}
one() { # name, bin, kernel, size, args...
  local n=$1 b=$2 k=$3 s=$4; shift 4
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-250} ] && return
  timeout 60 $b bench --kernel $k --size $s --warmup 3 --reps 10 --json "$@" > /tmp/$n.json 2>/tmp/$n.err
  python3 - "$n" <<'PY' >> $R/summary.txt 2>&1
import json,sys
n=sys.argv[1]
try:
    d=json.load(open(f'/tmp/{n}.json'))
except Exception as e:
    print(n,'FAILED',open(f'/tmp/{n}.err').read()[-300:]); sys.exit()
pd=' '.join(f"{p['kind']}:it={p['items']},busy={p['busy_s']*1e3:.3f},gbusy={(p['gpu_busy_s'] or 0)*1e3:.3f},fin={p['finish_s']*1e3:.3f},set={p['settled_s']*1e3:.3f},xfer={p['transfer_s']*1e3:.3f},pk={p['packages']},dn={p['download_bytes']>>20}M" for p in d['per_device'])
print(n,'first',round(d['first_s']*1e3,3),'warm',' '.join(f'{t*1e3:.3f}' for t in d['times_s']),'med',round(d['time_s']*1e3,3),'ok',d['verified'],pd)
PY
}
for k in ${KS:-histogram:2^22 spmv:2^21 mandelbrot:4096x4096}; do
  for b in $BINS; do
    one ${k%%:*}-$b-gpu $b ${k%%:*} ${k#*:} --devices gpu
    one ${k%%:*}-$b-all $b ${k%%:*} ${k#*:} --devices all
    one ${k%%:*}-$b-gpu2 $b ${k%%:*} ${k#*:} --devices gpu
  done
done
for k in ${KS:-histogram:2^22 spmv:2^21}; do
  COEXEC_LOG=coexec_engine::learn=debug timeout 60 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 3 --reps 10 --json > /tmp/l.json 2>/tmp/l.log
  grep -o 'chosen=[A-Za-z(0-9)]*' /tmp/l.log | tr '\n' ' ' | sed "s/^/${k%%:*} learner: /" >> $R/summary.txt; echo >> $R/summary.txt
  cp /tmp/l.log $R/${k%%:*}-learn.log
done
