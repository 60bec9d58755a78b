#!/bin/bash
# Interleaved he_bench calls: final (a593ee4: priming dispatch + early
# samples) and old (ff22e3a, the session's start); dev machine.
set -e
out=docs/benchmarks/dev/run27b
for i in ${ROUNDS:-1 2 3 4}; do
  for b in final old; do
    HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/coexec-$b $out/he-$b-$i.json \
      gather:100003 blackscholes:100003 collatz:30001 histogram:40000 mandelbrot:512x512 \
      > $out/he-$b-$i.txt 2>&1
  done
done
