#!/bin/bash
# The learner's decisions, run by run (warm-ups 12, reps 5), for each of
# SPECS (kernel:size:processes).
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for spec in ${SPECS:-collatz:2^23:3 histogram:2^22:3 mandelbrot:4096x4096:2}; do
  IFS=: read k s n <<< "$spec"
  for rep in $(seq 1 $n); do
    COEXEC_LOG=coexec_engine::learn=debug timeout 40 $B/coexec bench --kernel $k --size $s --devices all --warmup 12 --reps 5 --json > /tmp/a.json 2> $R/$k-$rep.log
    python3 -c "
import json,statistics as st;d=json.load(open('/tmp/a.json'))
t=d['times_s'];print('$k-$rep','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t],'first',round(d['first_s']*1e3,2))" >> $R/summary.txt 2>&1
    grep -o "run=[0-9]* mode=[A-Za-z()0-9]* seconds=[0-9.e-]* units=[0-9]* lone=[^ ]* [0-9]*" $R/$k-$rep.log | sed 's/ units=[0-9]*//' | tr '\n' ';' >> $R/summary.txt; echo >> $R/summary.txt
  done
done
