#!/bin/bash
# The learner on an equal footing, against the session's start: new
# (4e0614b) and base (0b55de5), ten rounds, interleaved; dev machine.
set -e
out=docs/benchmarks/dev/run28
for i in ${ROUNDS:-1 2 3 4 5 6 7 8 9 10}; do
  for b in new base; do
    HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/coexec-$b $out/he-$b-$i.json \
      gather:100003 blackscholes:100003 mandelbrot:512x512 > $out/he-$b-$i.txt 2>&1
  done
done
