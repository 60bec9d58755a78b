#!/bin/bash
# dev run 39: the time box for a held-back CPU. Every GPU's wave is taken
# as 2^20 units (COEXEC_ASSUME_GPU_WAVE, the testing aid), so that
# lavapipe's runs hold an unmeasured CPU's probe back as an H200's small
# runs do; he_bench's warm sweep (HE_SWEEP=1: each device alone with
# hguided and static, co-executed HGuided without hints; HE_REPS timed
# runs after 3 warm-up runs) with the box on and off (COEXEC_MEASURE_BOX),
# in interleaved rounds (ROUNDS, default "1 2"). Another rule's switch:
# SWITCH (default COEXEC_MEASURE_BOX), its files named TAG (default box)
# under OUT_DIR (default this run's raw/), as dev run 41 does.
cd /work/main
out=${OUT_DIR:-docs/benchmarks/dev/run39/raw}
switch=${SWITCH:-COEXEC_MEASURE_BOX}
tag=${TAG:-box}
specs="spmv:2^10 spmv:2^13 spmv:2^16 histogram:2^10 histogram:2^13 histogram:2^16 gather:2^13 gather:2^16 blackscholes:2^13 blackscholes:2^16 collatz:2^13 collatz:2^16 mandelbrot:128x128 jacobi:256x256"
for r in ${ROUNDS:-1 2}; do
  for on in 1 0; do
    env COEXEC_ASSUME_GPU_WAVE=1048576 "$switch=$on" HE_SWEEP=1 HE_REPS=${HE_REPS:-10} \
      python3 scripts/he_bench.py ${BIN:-target/release/coexec} $out/$tag$on-$r.json $specs > $out/$tag$on-$r.txt 2>&1
  done
done
echo DONE > $out/done
