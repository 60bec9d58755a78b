#!/bin/bash
# Where a cold first run loses against the GPU alone's (gather 2^23,
# collatz 2^23): the first run's packages as traces and the GPU loop's
# lines, co-executed and on the GPU alone, two fresh processes each,
# profiles off.
R=$OUT; export COEXEC_PROFILE=off
for k in gather collatz; do
  for p in 1 2; do
    for d in cpu,gpu gpu; do
      COEXEC_LOG=coexec_engine::exec::gpu=trace \
      timeout 60 coexec bench --kernel $k --size 2^23 --devices $d --warmup 0 --reps 1 \
        --trace $R/$k-$d-$p.json --trace-first > $R/$k-$d-$p.log 2>&1
      echo "$k $d p$p $(grep -o '[0-9.]* s (median' $R/$k-$d-$p.log)" >> $R/summary.txt
    done
  done
done
(cd $R && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
