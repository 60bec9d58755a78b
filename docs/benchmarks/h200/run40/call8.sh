#!/bin/bash
# h200 run 40, call 8: a lone GPU under static (one package) against
# HGuided at small sizes: each run's time, then one process of each with
# the dispatch loop's packages traced (exec::gpu) and the run's steps.
export COEXEC_PROFILE=off
mkdir -p $OUT/t
for ks in ${SPECS:-mandelbrot:2^19 mandelbrot:2^16 gather:2^19}; do
  k=${ks%%:*}; s=${ks#*:}; f=$OUT/t/$k-${s/^/_}
  for sch in static hguided dynamic:2; do
    for p in 1 2; do
      coexec bench --kernel $k --size $s --devices gpu --scheduler $sch --warmup 3 --reps 8 --json > /tmp/a.json 2>/dev/null
      echo "$ks $sch p$p $(python3 -c "import json;r=json.loads(open('/tmp/a.json').read().strip().splitlines()[-1]);print([round(t*1e3,3) for t in r['times_s']])")"
    done
    COEXEC_LOG="coexec_engine::exec::gpu=trace,coexec_engine::engine::phases=trace,coexec_engine::learn=debug" \
      coexec bench --kernel $k --size $s --devices gpu --scheduler $sch --warmup 3 --reps 4 --json > $f-${sch/:/}.json 2> $f-${sch/:/}.log
  done
done
cd $OUT && tar czf t.tgz t && rm -rf t
