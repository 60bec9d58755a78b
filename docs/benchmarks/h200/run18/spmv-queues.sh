#!/bin/bash
# A GPU alone in one package: the compute queue (=compute), the
# transfer-only queue (=dedicated) and the choice per run (=auto, whose
# ladder settles at one package on the sparse matrix), PROCS interleaved
# processes each, warm median of 10 runs after 5 warm-ups, profiles off.
R=$OUT; export COEXEC_PROFILE=off
for k in ${KS:-spmv:2^21 histogram:2^22}; do for p in $(seq ${PROCS:-4}); do for q in compute auto dedicated; do
  COEXEC_TRANSFER_QUEUE=$q timeout 40 coexec bench --kernel ${k%%:*} --size ${k#*:} --devices ${DEV:-gpu} --warmup 5 --reps 10 --json > /tmp/s.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/s.json'));g=[p for p in d['per_device'] if p['kind'].lower()!='cpu']
print('$k $q $p warm',round(d['time_s']*1e3,3),'gpk',[x['packages'] for x in g],'ok',d['verified'])" >> $R/summary.txt
done; done; done
