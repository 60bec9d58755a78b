#!/bin/bash
# h200 run 38, call 7: jacobi 8192x4096's warm runs, process by process:
# each run's time and CPU items (warmup 0, 12 reps), and the learner's
# debug lines, eight processes; condensed into $OUT/jacobi.txt.
export COEXEC_PROFILE=off
for p in 1 2 3 4 5 6 7 8; do
  COEXEC_LOG=coexec_engine::learn=debug coexec bench --kernel jacobi --size 8192x4096 --devices all \
    --warmup 0 --reps 12 --json > /tmp/j.out 2> /tmp/j.log
  { echo "== p$p"; python3 -c '
import json,sys
r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(" ".join("%.2f/%d" % (t*1e3, c//1000000) for t,c in zip(r["times_s"], r["times_cpu_items"])))' /tmp/j.out;
    grep -v "lone GPU's next run" /tmp/j.log | sed 's/^[^ ]* *//' | cut -c1-300 | head -40; } >> $OUT/jacobi.txt
done
cat $OUT/jacobi.txt | grep -A1 "^== "
