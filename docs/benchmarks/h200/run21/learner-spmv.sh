#!/bin/bash
# The learner's decisions, run by run, for one kernel on all devices (both
# binaries, one process each): configuration chosen, each run's time, the
# devices' shares.
R=$OUT; export COEXEC_PROFILE=off
K=${KERNEL:-spmv}; S=${SIZE:-2^21}
for b in coexec coexec-old; do
  COEXEC_LOG=coexec_engine::learn=debug timeout 60 .device/bin/$b bench --kernel $K --size $S --devices all --warmup 8 --reps 3 > /tmp/o.log 2>/tmp/o.err
  echo "== $b $(head -1 /tmp/o.log | cut -c1-100)" >> $R/summary.txt
  grep -E "learner ended|next run|lone GPU" /tmp/o.err | sed 's/^[0-9T:.-]*Z DEBUG coexec_engine::learn: //; s/shares=.*//' | cut -c1-420 >> $R/summary.txt
done
