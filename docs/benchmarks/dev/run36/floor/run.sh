#!/bin/bash
cd /work/main
for r in 1 2 3; do
  for b in new base; do
  HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/dev36b/coexec-$b /tmp/dev36b/$b-$r.json mandelbrot:512x512 gather:100003 blackscholes:100003 > /tmp/dev36b/$b-$r.txt 2>&1
  done
done
echo DONE > /tmp/dev36b/done
