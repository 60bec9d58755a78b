#!/bin/bash
# Jacobi on the H200: where the co-running ceiling lies. Solo baselines,
# Static over a sweep of CPU powers (the best fixed split: an empirical
# ceiling), HGuided warm with a trace of its last run, and the CPU with
# fewer workers. Every process: 3 warm-ups, median of 10.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
S=${SIZE:-8192x4096}
one() { # name, args...
  local n=$1; shift
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-250} ] && return
  timeout 40 coexec bench --kernel jacobi --size $S --warmup 3 --reps 10 --json "$@" > /tmp/$n.json 2>/tmp/$n.err
  python3 - "$n" <<'PY' >> $R/summary.txt 2>&1
import json,sys
n=sys.argv[1]
try:
    d=json.load(open(f'/tmp/{n}.json'))
except Exception as e:
    print(n,'FAILED',open(f'/tmp/{n}.err').read()[-300:]); sys.exit()
pd=' '.join(f"{p['kind']}:items={p['items']},busy={p['busy_s']*1e3:.2f},fin={p['finish_s']*1e3:.2f},pk={p['packages']},up={p['upload_bytes']>>20}M,dn={p['download_bytes']>>20}M" for p in d['per_device'])
print(n,'first',round(d['first_s']*1e3,3),'warm',' '.join(f'{t*1e3:.2f}' for t in d['times_s']),'med',round(d['time_s']*1e3,3),'bal',round(d['balance_raw'],2),'ok',d['verified'],pd)
PY
}
one gpu-staged --devices gpu
one gpu-zc --devices gpu --memory zero-copy
one cpu15 --devices cpu --scheduler static
one cpu8 --devices cpu --scheduler static --workers 8
for p in 0.3 0.4 0.5 0.6; do one st$p --devices all --scheduler static --cpu-power $p; done
one hg-1 --devices all --trace $R/hg-1.trace
one st-trace --devices all --scheduler static --cpu-power 0.5 --trace $R/st.trace
one hg-2 --devices all
one st0.5-zc --devices all --scheduler static --cpu-power 0.5 --memory zero-copy
one hg-zc --devices all --memory zero-copy
one st0.45w8 --devices all --scheduler static --cpu-power 0.45 --workers 8
one hg-w8 --devices all --workers 8
one gpu-staged-2 --devices gpu
one cpu15-2 --devices cpu --scheduler static
