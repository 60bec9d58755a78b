#!/bin/bash
# Every run of a process (15), its devices' shares and the learned costs
# after it: four processes of jacobi on all devices.
R=$OUT; export COEXEC_PROFILE=off
K=${KERNEL:-jacobi}; S=${SIZE:-8192x4096}
for n in 1 2 3 4; do
  COEXEC_LOG=coexec_engine::learn=debug timeout 60 coexec bench --kernel $K --size $S --devices all --warmup 12 --reps 3 --log > /tmp/r$n.log 2>/tmp/r$n.err
  echo "== $n" >> $R/summary.txt; head -1 /tmp/r$n.log | cut -c1-120 >> $R/summary.txt
  grep "learner ended" /tmp/r$n.err | sed 's/.*ended //; s/Share { slot: //g; s/Some(Cost { overhead_s: //g' >> $R/summary.txt
  gzip -c /tmp/r$n.err > $R/runs-$n.err.gz
done
