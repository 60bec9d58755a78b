#!/bin/bash
# A lone GPU's ladder, run by run (the learner's debug lines), GPU alone
# and all devices, default transfer queue (auto), profiles off.
R=$OUT; export COEXEC_PROFILE=off
for k in ${KS:-spmv:2^21}; do for dev in ${DEVS:-gpu}; do for i in $(seq ${PROCS:-3}); do
  COEXEC_LOG=coexec_engine::learn=debug timeout 60 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices $dev --warmup 5 --reps 10 --json > /tmp/l.json 2>/tmp/l.log
  echo "$k $dev $i times $(python3 -c "import json;d=json.load(open('/tmp/l.json'));print(' '.join(f'{t*1e3:.2f}' for t in d['times_s']))")" >> $R/summary.txt
  grep "lone GPU" /tmp/l.log | sed 's/.*DEBUG//; s/coexec_engine::learn: //' >> $R/summary.txt
done; done; done
