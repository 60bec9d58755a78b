#!/bin/bash
# Spmv's one-package GPU runs, run by run: the compute queue (=compute),
# auto, and auto whose first run also stays on the compute queue (an
# experiment's binary `coexec-nofirst`, not kept); PROCS processes each.
R=$OUT; export COEXEC_PROFILE=off
for k in ${KS:-spmv:2^21}; do for p in $(seq ${PROCS:-2}); do for v in compute auto nofirst; do
  case $v in nofirst) b=coexec-nofirst; q=auto;; *) b=coexec; q=$v;; esac
  COEXEC_TRANSFER_QUEUE=$q timeout 40 $b bench --kernel ${k%%:*} --size ${k#*:} --devices ${DEV:-gpu} --warmup 5 --reps 10 --json > /tmp/s.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/s.json'))
print('$k $v $p warm',round(d['time_s']*1e3,3),'times',' '.join(f'{t*1e3:.2f}' for t in d['times_s']))" >> $R/summary.txt
done; done; done
