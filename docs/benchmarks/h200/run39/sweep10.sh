#!/bin/bash
# h200 run 39, call 10: the floor at small sizes, warm (he_bench's sweep:
# co-executed HGuided against the best of each device alone with hguided
# and static, medians of five after three warm-ups, HE_PROCS interleaved
# processes per configuration, profiles off). Guarded by LIMIT seconds.
HE_SWEEP=1 HE_REPS=5 HE_PROCS=${HE_PROCS:-3} timeout ${LIMIT:-190} python3 scripts/he_bench.py coexec $OUT/sweep.json \
  ${SPECS:-gather:2^10 histogram:2^10 spmv:2^10 mandelbrot:2^10 gather:2^13 histogram:2^13 spmv:2^13 mandelbrot:2^13 gather:2^16 histogram:2^16 spmv:2^16 mandelbrot:2^16 gather:2^19 histogram:2^19 spmv:2^19 mandelbrot:2^19} > $OUT/sweep.txt 2>&1
cat $OUT/sweep.txt
