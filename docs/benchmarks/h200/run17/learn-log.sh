#!/bin/bash
# The learner's decisions over the first runs of a process (profiles off),
# condensed: per run, the model's choice, the predictions, the choice.
R=$OUT; export COEXEC_PROFILE=off
for k in ${KS:-mandelbrot:4096x4096 histogram:2^22}; do for i in 1 2; do
  COEXEC_LOG=coexec_engine::learn=debug timeout 60 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices all --warmup 3 --reps 5 --json > /tmp/l.json 2>/tmp/l.log
  python3 - "${k%%:*}-$i" <<'PY' >> $R/summary.txt
import json,re,sys
d=json.load(open('/tmp/l.json'))
print(sys.argv[1], 'times', ' '.join(f'{t*1e3:.2f}' for t in d['times_s']))
for l in open('/tmp/l.log'):
    if 'configuration of the next run' not in l: continue
    f=lambda k: re.search(k+r'=(\S+)',l).group(1)
    pr=re.sub(r'(\d\.\d{2})\d+e',r'\1e',re.search(r'predicted=\[(.*?)\] chosen',l).group(1))
    ms=re.sub(r'(\d\.\d{2})\d+e',r'\1e',re.search(r'measured=\[(.*?)\]\s*$',l).group(1))
    print('  model',f('model'),'chosen',f('chosen'),'inc',f('incumbent'),'pred',pr,'meas',ms)
PY
done; done
