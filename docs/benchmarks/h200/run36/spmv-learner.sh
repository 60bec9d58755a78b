#!/bin/bash
# h200 run 36: where a co-executed spmv's warm runs go, per process: the
# learner's choices and each run's time (COEXEC_LOG learner debug), PROCS
# fresh processes, profiles off. Results under $OUT/spmv.
mkdir -p $OUT/spmv; export COEXEC_PROFILE=off
for p in $(seq ${PROCS:-6}); do
  COEXEC_LOG=coexec_engine::learn=debug,coexec_engine::engine::run=debug coexec bench --kernel spmv --size ${SIZE:-2^21} --devices all --warmup 3 --reps 9 --json > $OUT/spmv/p$p.json 2> $OUT/spmv/p$p.log
done
true
