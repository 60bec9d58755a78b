#!/bin/bash
# h200 run 40, call 3: what a run of the CPU workers alone costs in an
# engine that also opened the GPU (the GPU given power 0: it sits out)
# against an engine of the CPU alone, at small sizes; two processes each,
# interleaved, warm-up 3, ten runs; then one process of each with the
# run's steps traced (engine::phases) and the learner's lines, HGuided.
export COEXEC_PROFILE=off
med() { python3 -c "import json,statistics as s;r=json.loads(open('$1').read().strip().splitlines()[-1]);t=r['times_s'];print('first %.3f median %.3f min %.3f ms' % (t[0]*1e3, s.median(t)*1e3, min(t)*1e3))"; }
mkdir -p $OUT/t
for ks in ${SPECS:-gather:2^10 spmv:2^13 histogram:2^13 mandelbrot:2^13}; do
  k=${ks%%:*}; s=${ks#*:}
  for p in 1 2; do
    coexec bench --kernel $k --size $s --devices cpu --scheduler static --warmup 3 --reps 10 --json > /tmp/a.json 2>/dev/null
    echo "$ks cpu-engine p$p $(med /tmp/a.json)"
    coexec bench --kernel $k --size $s --devices all --scheduler static --cpu-power 1 --warmup 3 --reps 10 --json > /tmp/b.json 2>/dev/null
    echo "$ks all-engine-gpu-sits p$p $(med /tmp/b.json)"
    coexec bench --kernel $k --size $s --devices all --warmup 3 --reps 10 --json > /tmp/c.json 2>/dev/null
    echo "$ks all-engine-hguided p$p $(med /tmp/c.json)"
  done
  f=$OUT/t/$k-${s/^/_}
  COEXEC_LOG="coexec_engine::engine::phases=trace" coexec bench --kernel $k --size $s --devices all --scheduler static --cpu-power 1 --warmup 0 --reps 6 --json > $f-sits.json 2> $f-sits.log
  COEXEC_LOG="coexec_engine::engine::phases=trace,coexec_engine::learn=debug" coexec bench --kernel $k --size $s --devices all --warmup 0 --reps 8 --json > $f-hg.json 2> $f-hg.log
  COEXEC_LOG="coexec_engine::engine::phases=trace" coexec bench --kernel $k --size $s --devices cpu --scheduler static --warmup 0 --reps 6 --json > $f-cpu.json 2> $f-cpu.log
done
cd $OUT && tar czf t.tgz t && rm -rf t
