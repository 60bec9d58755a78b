#!/bin/bash
# Whether CONCURRENT sharing costs a one-package GPU run: the compute queue
# with buffers EXCLUSIVE (=compute), the same with buffers CONCURRENT
# between the compute and the transfer-only family (=compute and
# COEXEC_X_CONCURRENT=1, an experiment's binary `coexec-conc`, not kept),
# and auto; PROCS interleaved processes each, warm medians of 10 after 5
# warm-ups, profiles off.
R=$OUT; export COEXEC_PROFILE=off
for k in ${KS:-spmv:2^21 histogram:2^22}; do for p in $(seq ${PROCS:-4}); do for v in compute conc auto; do
  case $v in conc) q=compute; c=1;; *) q=$v; c=0;; esac
  COEXEC_X_CONCURRENT=$c COEXEC_TRANSFER_QUEUE=$q timeout 40 coexec-conc bench --kernel ${k%%:*} --size ${k#*:} --devices ${DEV:-gpu} --warmup 5 --reps 10 --json > /tmp/s.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/s.json'));g=[p for p in d['per_device'] if p['kind'].lower()!='cpu']
print('$k $v $p warm',round(d['time_s']*1e3,3),'gpk',[x['packages'] for x in g],'ok',d['verified'])" >> $R/summary.txt
done; done; done
