#!/bin/bash
# What the GPU's loop logs around its first steal in a cold ray run.
R=$OUT; export COEXEC_PROFILE=off
for i in 1 2; do
COEXEC_LOG=coexec_engine=trace timeout 40 coexec bench --kernel ray --size 4096x4096 --devices all --warmup 1 --reps 1 > /dev/null 2>/tmp/l$i.log
python3 - $i <<'PY' >> $R/summary.txt
import sys
i=sys.argv[1]
L=open(f'/tmp/l{i}.log').read().splitlines()
idx=[k for k,l in enumerate(L) if 'seen complete' in l]
a,b=idx[3]-3,idx[5]+3
print(f'--- run {i}: {len(L)} lines; lines {a}..{b}')
for l in L[a:b]: print(l[:300])
PY
done
