#!/bin/bash
# A lone GPU's package count as the formula sqrt(min(C, D) / o) chose it
# (the code of raw/01-03, not kept: its debug line is gone), all devices
# and the GPU alone, COEXEC_TRANSFER_QUEUE=auto, profiles off.
R=$OUT; export COEXEC_PROFILE=off COEXEC_TRANSFER_QUEUE=auto
for k in collatz:2^23 mandelbrot:4096x4096 spmv:2^21; do for dev in all gpu; do
  COEXEC_LOG=coexec_engine::sched=debug timeout 60 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices $dev --warmup 3 --reps 5 --json > /tmp/l.json 2>/tmp/l.log
  echo "$k $dev $(python3 -c "import json;d=json.load(open('/tmp/l.json'));print(' '.join(f'{t*1e3:.2f}' for t in d['times_s']))")" >> $R/summary.txt
  grep "lone GPU" /tmp/l.log | sed 's/.*DEBUG//' | tail -12 >> $R/summary.txt
done; done
