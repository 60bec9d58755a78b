#!/bin/bash
# The learner's view of each run (its debug lines: configuration chosen,
# predictions, costs, run times) for one process per binary of a kernel's
# warm runs (3 warm-ups, 10 runs), profiles off.
R=$OUT; export COEXEC_PROFILE=off
for spec in ${SPECS:-jacobi:8192x4096}; do
  k=${spec%%:*}; s=${spec#*:}
  for b in ${BINS:-coexec coexec-old}; do
    COEXEC_LOG=coexec_engine::learn=debug timeout 60 .device/bin/$b bench --kernel $k --size $s --devices all --warmup 3 --reps 10 --log > /tmp/o.log 2>/tmp/o.err
    echo "== $k $b" >> $R/summary.txt
    sed 's/^[0-9T:.-]*Z *[A-Z]* coexec_engine:://' /tmp/o.err | grep -E "run of the learner ended|configuration of the next" | sed -E 's/partial=.*//' | cut -c1-700 >> $R/summary.txt
    tail -3 /tmp/o.log >> $R/summary.txt
  done
done
