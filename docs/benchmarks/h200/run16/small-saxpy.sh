#!/bin/bash
# Saxpy 2^20 warm: why the learner keeps the CPU alone (0.35-0.41 ms) where
# the GPU alone takes 0.29 ms. The learner's log of one co-executed process,
# then each device alone.
R=$OUT; export COEXEC_PROFILE=off
COEXEC_LOG=coexec_engine::learn=debug timeout 30 coexec bench --kernel saxpy --size 2^20 --devices all --warmup 3 --reps 20 --json > /tmp/a.json 2>/tmp/a.log
python3 -c "import json;d=json.load(open('/tmp/a.json'));print('all', [round(t*1e3,3) for t in d['times_s']], 'cpu', d['cpu_items'])" >> $R/summary.txt
grep -v "^\s*$" /tmp/a.log | cut -c1-400 | head -60 >> $R/summary.txt
for d in gpu cpu; do
timeout 30 coexec bench --kernel saxpy --size 2^20 --devices $d --scheduler static --warmup 3 --reps 20 --json > /tmp/$d.json 2>/dev/null
python3 -c "import json;d=json.load(open('/tmp/$d.json'));print('$d', round(d['time_s']*1e3,3), [round(t*1e3,3) for t in d['times_s']])" >> $R/summary.txt
done
