#!/bin/bash
# h200 run 40, call 2: whole debug logs (the learner, the run's sizing, the
# plan's HGuided claims) of single processes of the specs that call 1 left
# below 0.98: a process per spec, warm-up 0, six runs, profiles off.
export COEXEC_PROFILE=off
mkdir -p $OUT/logs
for ks in ${SPECS:-histogram:2^19 spmv:2^19 gather:2^10 mandelbrot:2^10 histogram:2^13 mandelbrot:2^19}; do
  k=${ks%%:*}; s=${ks#*:}; f=$OUT/logs/$k-${s/^/_}
  COEXEC_LOG="coexec_engine::learn=debug,coexec_engine::engine::run=debug,coexec_engine::sched::plan=trace,coexec_engine::exec::gpu=trace" \
    timeout 30 coexec bench --kernel $k --size $s --devices all --warmup 0 --reps ${REPS:-6} --json > $f.json 2> $f.log
  echo "$ks $(python3 -c "import json,sys;r=json.loads(open('$f.json').read().strip().splitlines()[-1]);print([round(t*1e3,3) for t in r['times_s']])")"
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
