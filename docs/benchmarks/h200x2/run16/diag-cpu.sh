#!/bin/bash
# h200x2 run 16: where the CPU workers beside two GPUs cost time (h200x4
# run 6: spmv, collatz, taylor slower with the CPU than the GPUs without
# it). Per spec, two processes on cpu,gpu0,gpu1 and one on gpu0,gpu1,
# warm-up 0, twelve runs, the learner's lines and each run's sizing;
# profiles off.
export COEXEC_PROFILE=off PATH=$PWD/.device/bin:$PATH
mkdir -p $OUT/logs
for ks in ${SPECS:-spmv:2^21 collatz:2^23 taylor:16776960}; do
  k=${ks%%:*}; s=${ks#*:}
  for d in cpu,gpu0,gpu1:1 cpu,gpu0,gpu1:2 gpu0,gpu1:1; do
    f=$OUT/logs/$k-${d%%:*}-${d#*:}
    COEXEC_LOG="coexec_engine::learn=debug,coexec_engine::engine::run=debug" \
      timeout 60 coexec bench --kernel $k --size $s --devices ${d%%:*} --warmup 0 --reps ${REPS:-12} --json > $f.json 2> $f.log
    echo "$ks ${d} $(python3 -c "import json,sys;r=json.loads(open('$f.json').read().strip().splitlines()[-1]);print([round(t*1e3,2) for t in r['times_s']], r.get('times_cpu_items'))")"
  done
done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
