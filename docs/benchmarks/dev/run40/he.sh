#!/bin/bash
# dev run 40: he_bench (HE_REPS=3 HE_COLD=3) of the comparable kernels
# with the CPU's unstarted units counted (COEXEC_CPU_HELD=1) and not (=0),
# rounds interleaved (ROUNDS, default "1"); baselines each device's best
# solo configuration (unaffected by the switch: it needs both devices).
cd /work/main
BIN=${BIN:-target/release/coexec}
out=docs/benchmarks/dev/run40/raw
for r in ${ROUNDS:-1}; do
  for held in 1 0; do
    COEXEC_CPU_HELD=$held HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py $BIN $out/he-held$held-$r.json \
      blackscholes:100003 mandelbrot:512x512 gather:100003 > $out/he-held$held-$r.txt 2>&1
  done
done
echo DONE > $out/he-done
