#!/bin/bash
# Spmv's GPU runs package by package (the dispatch loop's trace lines:
# host and GPU microseconds), under auto and compute, one process each.
R=$OUT; export COEXEC_PROFILE=off
for q in auto compute auto compute; do
  COEXEC_TRANSFER_QUEUE=$q COEXEC_LOG=coexec_engine::exec::gpu=trace timeout 60 coexec bench --kernel spmv --size 2^21 --devices gpu --warmup 5 --reps 10 --json > /tmp/t.json 2>/tmp/t.log
  echo "$q times $(python3 -c "import json;d=json.load(open('/tmp/t.json'));print(' '.join(f'{t*1e3:.2f}' for t in d['times_s']))")" >> $R/summary.txt
  grep -E "package (complete|done|seen)|host_us" /tmp/t.log | sed 's/.*TRACE//' | tail -12 >> $R/summary.txt
done
