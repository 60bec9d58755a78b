#!/bin/bash
# A/B of the ladder's recheck (cg, coexec) against the step before it
# (cg-old, coexec-old): CG (lazy coherence, 4096^2 x 30) on all devices,
# three interleaved processes each, and the GPU alone; one CG process with
# the learner logged; then warm runs (3 warm-ups, 5 runs) of three kernels.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
for rep in 1 2 3; do
  for p in cg cg-old; do echo "$p-all-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/$p 4096 30 all 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt; done
done
echo "cg-gpu $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg 4096 30 gpu 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
COEXEC_HOST_COHERENCE=lazy COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/cg 4096 30 all > $R/cg-all.log 2>&1
grep -o "run=[0-9]* mode=[A-Za-z()0-9]* seconds=[0-9.e-]* units=[0-9]* lone=Some(([0-9], [0-9]*" $R/cg-all.log | tail -8 | tr '\n' ';' >> $R/summary.txt; echo >> $R/summary.txt
for spec in histogram:2^22 collatz:2^23 mandelbrot:4096x4096; do
  IFS=: read k s <<< "$spec"
  for rep in 1 2 3; do for b in coexec coexec-old; do
    timeout 40 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/a.json 2>/dev/null
    python3 -c "
import json,statistics as st;d=json.load(open('/tmp/a.json'))
t=d['times_s'];print('$k $b-$rep','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t])" >> $R/summary.txt 2>&1
  done; done
done
