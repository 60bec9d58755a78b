#!/bin/bash
# Warm co-executed runs (3 warm-ups, 10 runs, median) of K (kernel:size)
# for each binary of BINS, processes interleaved, profiles off; then one
# traced last run per binary (traces packed in traces.tar.xz).
R=$OUT; export COEXEC_PROFILE=off; K=${K:-jacobi:8192x4096}
for rep in 1 2 3 4; do for b in ${BINS:-coexec coexec-old}; do
  n=$b-$rep
  timeout 40 $b bench --kernel ${K%%:*} --size ${K#*:} --devices all --warmup 3 --reps 10 --json > /tmp/$n.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/$n.json'))
print('$n','first',round(d['first_s']*1e3,2),'warm',round(d['time_s']*1e3,2),'cpu',d['cpu_items'],'pk',d['packages'])" >> $R/summary.txt 2>&1
done; done
mkdir -p /tmp/tr
for b in ${BINS:-coexec coexec-old}; do
  timeout 40 $b bench --kernel ${K%%:*} --size ${K#*:} --devices all --warmup 3 --reps 3 --json --trace /tmp/tr/$b.trace > /dev/null 2>&1
done
tar cJf $R/traces.tar.xz -C /tmp/tr .
