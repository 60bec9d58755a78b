#!/bin/bash
# The GPUs without the CPU as a configuration of the learner (coexec)
# against main before it (coexec-old), on two H200s and the CPU workers:
# every run of a process (3 warm-ups, 5 timed), the last run's items per
# device, processes interleaved; the two GPUs without the CPU for scale.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
one() { # name, binary, kernel, size, devices
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-200} ] && return
  timeout 60 $2 bench --kernel $3 --size $4 --devices $5 --warmup 3 --reps 5 --json > /tmp/$1.json 2>/tmp/$1.err
  python3 -c "
import json;d=json.load(open('/tmp/$1.json'))
print('$1','first',round(d['first_s']*1e3,2),'runs',' '.join(f'{t*1e3:.2f}' for t in d['times_s']),'med',round(d['time_s']*1e3,2),'items',[p['items'] for p in d['per_device']],'ok',d['verified'])" >> $R/summary.txt 2>&1 || echo "$1 FAILED $(tail -c 300 /tmp/$1.err)" >> $R/summary.txt
}
for rep in 1 2 3; do for ks in ${KS:-taylor:16776960 matmul:4096x4096}; do
  for b in coexec coexec-old; do one ${ks%%:*}-$b-$rep $b ${ks%%:*} ${ks#*:} cpu,gpu0,gpu1; done
done; done
for ks in ${KS:-taylor:16776960 matmul:4096x4096}; do one ${ks%%:*}-gpus coexec ${ks%%:*} ${ks#*:} gpu0,gpu1; done
