#!/bin/bash
# The warm trap, counted: final (a593ee4), new (063aa10) and old
# (ff22e3a), eight rounds, interleaved; dev machine.
set -e
out=docs/benchmarks/dev/run27d
for i in ${ROUNDS:-1 2 3 4 5 6 7 8}; do
  for b in final new old; do
    HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/coexec-$b $out/he-$b-$i.json \
      gather:100003 blackscholes:100003 mandelbrot:512x512 > $out/he-$b-$i.txt 2>&1
  done
done
