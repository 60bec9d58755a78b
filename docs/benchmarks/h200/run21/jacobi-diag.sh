#!/bin/bash
# Jacobi warm on the H200: where HGuided's co-executed run loses against the
# best fixed split. Solo baselines, Static over CPU powers, HGuided in three
# processes (one with the learner's decisions logged), each with its last
# run's package log. Every process: 3 warm-ups, median of 10.
R=$OUT; START=$(date +%s); export COEXEC_PROFILE=off
S=${SIZE:-8192x4096}; K=${KERNEL:-jacobi}
one() { # name, args...
  local n=$1; shift
  [ $(( $(date +%s) - START )) -gt ${LIMIT:-250} ] && return
  timeout 40 coexec bench --kernel $K --size $S --warmup 3 --reps 10 --log "$@" > $R/$n.log 2>$R/$n.err
  echo "$n: $(grep -E 'median of' $R/$n.log | sed 's/.*: //')" >> $R/summary.txt
  grep -E '^  (cpu|gpu)' $R/$n.log >> $R/summary.txt
}
one gpu --devices gpu
one cpu --devices cpu --scheduler static
for p in 0.45 0.5 0.56 0.62; do one st$p --devices all --scheduler static --cpu-power $p; done
COEXEC_LOG=coexec_engine::learn=debug one hg-1 --devices all
one hg-2 --devices all
one hg-3 --devices all
one st0.56b --devices all --scheduler static --cpu-power 0.56
one hg-4 --devices all
