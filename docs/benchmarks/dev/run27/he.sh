#!/bin/bash
# Interleaved he_bench calls, the new binary (priming dispatch) and the old
# (HEAD before it); dev machine (lavapipe + 1 CPU worker).
set -e
out=docs/benchmarks/dev/run27
for i in ${ROUNDS:-1 2 3}; do
  for b in new old; do
    HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/coexec-$b $out/he-$b-$i.json \
      gather:100003 blackscholes:100003 collatz:30001 histogram:40000 mandelbrot:512x512 \
      > $out/he-$b-$i.txt 2>&1
  done
done
