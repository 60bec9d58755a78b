#!/bin/bash
# A/B of the learner's step (coexec) against the code before it
# (coexec-old): HGuided without hints on all devices, 3 warm-ups then 5
# runs (the HE bench's warm measurement), processes interleaved, profiles
# off; then CG and k-means (lazy coherence), all devices and the GPU alone.
# ORDER: the binaries of each round, in order (default: coexec coexec-old).
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin; START=$(date +%s)
one() { # label, json file
  python3 -c "
import json,statistics as st;d=json.load(open('$2'))
t=d['times_s'];print('$1','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t],'first',round(d['first_s']*1e3,2),'cpu',d['cpu_items'],'pk',d['packages'])" >> $R/summary.txt 2>&1
}
for spec in ${SPECS:-histogram:2^22 collatz:2^23 mandelbrot:4096x4096 jacobi:8192x4096 spmv:2^21 gather:2^23}; do
  IFS=: read k s <<< "$spec"
  for rep in $(seq 1 ${PROCS:-4}); do for b in ${ORDER:-coexec coexec-old}; do
    timeout 40 $B/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/a.json 2>/dev/null; one "$k $b-$rep" /tmp/a.json
  done; done
done
for rep in 1 2; do
  for p in cg; do echo "$p-all-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/$p 4096 30 all 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt; done
  echo "cg-gpu-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg 4096 30 gpu 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
  for p in kmeans; do echo "$p-all-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/$p 16777216 20 all 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt; done
  echo "kmeans-gpu-$rep $(COEXEC_HOST_COHERENCE=lazy timeout 60 $B/kmeans 16777216 20 gpu 2>&1 | grep -E 'time per|differs|rror' | tr '\n' ' ')" >> $R/summary.txt
done
echo "wall $(( $(date +%s) - START )) s" >> $R/summary.txt
