#!/bin/bash
# The first steal's delay in a cold ray run under the transfer-queue and
# wait knobs.
R=$OUT; export COEXEC_PROFILE=off
for env in "X=1" "COEXEC_TRANSFER_QUEUE=compute" "COEXEC_TRANSFER_QUEUE=separate" "COEXEC_GPU_WAIT=spin" "COEXEC_GPU_WAIT=block"; do
for i in 1 2; do
env $env COEXEC_LOG=coexec_engine::exec::gpu=trace timeout 40 coexec bench --kernel ray --size 4096x4096 --devices all --warmup 1 --reps 1 --json > /tmp/j.json 2>/tmp/l.log
python3 - "$env" <<'PY' >> $R/summary.txt
import sys,re,json
L=[l for l in open('/tmp/l.log') if 'seen complete' in l]
d=json.load(open('/tmp/j.json'))
print(sys.argv[1], 'first', round(d['first_s']*1e3,2), [tuple(round(float(v)) for v in re.findall(r'_us=([0-9.]+)', l)) for l in L[3:7]])
PY
done; done
