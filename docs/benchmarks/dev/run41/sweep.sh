#!/bin/bash
# dev run 41: a short run's slow sample measured again once
# (COEXEC_SHORT_RETRY). As dev run 39's sweep.sh: every GPU's wave taken as
# 2^20 units (COEXEC_ASSUME_GPU_WAVE, the testing aid), so that lavapipe's
# runs hold an unmeasured CPU's probe back as an H200's small runs do;
# he_bench's warm sweep (HE_SWEEP=1, HE_REPS timed runs after 3 warm-up
# runs, one process per configuration) with the rule on and off, in
# interleaved rounds (ROUNDS, default "1 2").
cd /work/main
out=docs/benchmarks/dev/run41/raw
specs="spmv:2^10 spmv:2^13 spmv:2^16 histogram:2^10 histogram:2^13 histogram:2^16 gather:2^13 gather:2^16 blackscholes:2^13 blackscholes:2^16 collatz:2^13 collatz:2^16 mandelbrot:128x128 jacobi:256x256"
for r in ${ROUNDS:-1 2}; do
  for rule in 1 0; do
    COEXEC_ASSUME_GPU_WAVE=1048576 COEXEC_SHORT_RETRY=$rule HE_SWEEP=1 HE_REPS=${HE_REPS:-10} \
      python3 scripts/he_bench.py ${BIN:-target/release/coexec} $out/retry$rule-$r.json $specs > $out/retry$rule-$r.txt 2>&1
  done
done
echo DONE > $out/done
