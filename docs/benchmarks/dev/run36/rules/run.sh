#!/bin/bash
cd /work/main
for r in 1 2 3; do
  HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/dev36/coexec-9c3a370 /tmp/dev36/new-$r.json mandelbrot:512x512 gather:100003 blackscholes:100003 > /tmp/dev36/new-$r.txt 2>&1
  COEXEC_IRREGULAR=0 COEXEC_STEAL_COME_BACK=0 HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/dev36/coexec-9c3a370 /tmp/dev36/off-$r.json mandelbrot:512x512 gather:100003 blackscholes:100003 > /tmp/dev36/off-$r.txt 2>&1
done
echo DONE > /tmp/dev36/done
