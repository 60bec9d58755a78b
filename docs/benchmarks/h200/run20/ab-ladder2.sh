#!/bin/bash
# Mandelbrot and histogram warm (3 warm-ups, 5 runs), the ladder's recheck
# (coexec) against the step before it (coexec-old), 6 interleaved
# processes each; then one process of each with the learner logged.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for spec in mandelbrot:4096x4096 histogram:2^22; do
  IFS=: read k s <<< "$spec"
  for rep in 1 2 3 4 5 6; do for b in coexec coexec-old; do
    timeout 40 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/a.json 2>/dev/null
    python3 -c "
import json,statistics as st;d=json.load(open('/tmp/a.json'))
t=d['times_s'];print('$k $b-$rep','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t])" >> $R/summary.txt 2>&1
  done; done
  for b in coexec coexec-old; do
    COEXEC_LOG=coexec_engine::learn=debug timeout 40 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 > /dev/null 2> $R/$k-$b.log
    grep -o "run=[0-9]* mode=[A-Za-z()0-9]* seconds=[0-9.e-]* units=[0-9]* lone=[^ ]* [0-9]*" $R/$k-$b.log | sed 's/ units=[0-9]*//' | tr '\n' ';' | sed "s/^/$k $b: /" >> $R/summary.txt; echo >> $R/summary.txt
  done
done
