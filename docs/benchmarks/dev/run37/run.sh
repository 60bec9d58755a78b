#!/bin/bash
# dev run 37: this session's code (`new`, 5a6ceb8) against the session's
# start (`base`, 7ec36a6), he_bench three interleaved rounds; binaries
# copied to /tmp/devhe/.
cd /work/main
for r in 1 2 3; do
  for b in new base; do
  HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/devhe/coexec-$b /tmp/devhe/$b-$r.json mandelbrot:512x512 gather:100003 blackscholes:100003 > /tmp/devhe/$b-$r.txt 2>&1
  done
done
echo DONE > /tmp/devhe/done
