#!/bin/bash
cd /work/main
for r in 1 2 3; do
  HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/dev36c/coexec /tmp/dev36c/new-$r.json blackscholes:100003 mandelbrot:512x512 gather:100003 > /tmp/dev36c/new-$r.txt 2>&1
  COEXEC_SEPARATE_SMALLER=0 HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/dev36c/coexec /tmp/dev36c/off-$r.json blackscholes:100003 mandelbrot:512x512 gather:100003 > /tmp/dev36c/off-$r.txt 2>&1
done
echo DONE > /tmp/dev36c/done
