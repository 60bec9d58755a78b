#!/bin/bash
# A/B of the provisional GPU cost (coexec, cg) against the step before it
# (coexec-old, cg-old): warm runs as in ab-learner.sh, then CG (lazy
# coherence) on all devices with both, the GPU alone, and one CG process
# with the learner logged.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin; START=$(date +%s)
one() { # label, json file
  python3 -c "
import json,statistics as st;d=json.load(open('$2'))
t=d['times_s'];print('$1','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t],'first',round(d['first_s']*1e3,2),'cpu',d['cpu_items'],'pk',d['packages'])" >> $R/summary.txt 2>&1
}
for rep in 1 2 3; do
  for p in cg cg-old; do echo "$p-all-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/$p 4096 30 all 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt; done
  echo "cg-gpu-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg 4096 30 gpu 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
done
COEXEC_HOST_COHERENCE=lazy COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/cg 4096 30 all > $R/cg-all.log 2>&1
grep -o "run=[0-9]* mode=[A-Za-z()0-9]* seconds=[0-9.e-]*" $R/cg-all.log | head -16 | tr '\n' ';' >> $R/summary.txt; echo >> $R/summary.txt
for spec in ${SPECS:-histogram:2^22 collatz:2^23 mandelbrot:4096x4096 jacobi:8192x4096 spmv:2^21 gather:2^23}; do
  IFS=: read k s <<< "$spec"
  for rep in $(seq 1 ${PROCS:-4}); do for b in coexec coexec-old; do
    timeout 40 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/a.json 2>/dev/null; one "$k $b-$rep" /tmp/a.json
  done; done
done
echo "wall $(( $(date +%s) - START )) s" >> $R/summary.txt
