#!/bin/bash
# Diagnostics: (1) warm floor kernels, interleaved processes: the GPU's
# best solo configuration against HGuided without hints on all devices
# after 3 and after 12 warm-ups (each rep's time kept); (2) CG's learner
# decisions, run by run; (3) a cold histogram run's steps.
R=$OUT; export COEXEC_PROFILE=off; B=.device/bin
one() { # label, json file
  python3 -c "
import json,statistics as st;d=json.load(open('$2'))
t=d['times_s'];print('$1','med',round(st.median(t)*1e3,3),'reps',[round(x*1e3,3) for x in t],'first',round(d['first_s']*1e3,2),'cpu',d['cpu_items'],'pk',d['packages'])" >> $R/summary.txt 2>&1
}
for spec in ${SPECS:-histogram:2^22:dynamic:8 collatz:2^23:dynamic:4 mandelbrot:4096x4096:dynamic:8}; do
  IFS=: read k s g n <<< "$spec"
  for rep in $(seq 1 ${PROCS:-6}); do
    COEXEC_TRANSFER_QUEUE=dedicated timeout 40 $B/coexec bench --kernel $k --size $s --devices gpu --scheduler $g:$n --warmup 3 --reps 5 --json > /tmp/g.json 2>/dev/null; one "$k gpu-$g:$n-$rep" /tmp/g.json
    timeout 40 $B/coexec bench --kernel $k --size $s --devices all --warmup 3 --reps 5 --json > /tmp/a.json 2>/dev/null; one "$k all-w3-$rep" /tmp/a.json
    timeout 40 $B/coexec bench --kernel $k --size $s --devices all --warmup 12 --reps 5 --json > /tmp/a.json 2>/dev/null; one "$k all-w12-$rep" /tmp/a.json
  done
done
COEXEC_HOST_COHERENCE=lazy COEXEC_LOG=coexec_engine::learn=debug timeout 60 $B/cg 4096 30 all > $R/cg-all.log 2>&1
COEXEC_HOST_COHERENCE=lazy timeout 60 $B/cg 4096 30 gpu > $R/cg-gpu.log 2>&1
COEXEC_LOG=coexec_engine::engine::phases=trace,coexec_engine::learn=debug timeout 40 $B/coexec bench --kernel histogram --size 2^22 --devices all --warmup 0 --reps 1 --trace /tmp/h.trace > $R/hist-cold.log 2>&1
cp /tmp/h.trace $R/ 2>/dev/null
grep -E "time per|differs" $R/cg-*.log >> $R/summary.txt
