#!/bin/bash
# h200 run 35: where a cold co-executed run's end goes: when each
# claimant's loop ended, when they were joined, against the GPU's last
# download; PROCS first runs per kernel, profiles off. Results under $OUT.
export COEXEC_PROFILE=off
for spec in ${TSPECS:-mandelbrot:4096x4096 collatz:2^23 gather:2^23}; do
  K=${spec%%:*}; S=${spec#*:}
  for p in $(seq ${PROCS:-3}); do
    COEXEC_LOG=coexec_engine::engine::run=trace,coexec_engine::engine::phases=trace,coexec_engine::exec::gpu=trace \
    timeout 60 coexec bench --kernel $K --size $S --devices all --warmup 1 --reps 1 --json \
      > $OUT/$K-all-$p.log 2>&1
  done
done
(cd $OUT && tar czf logs.tgz *.log && rm -f *.log)
