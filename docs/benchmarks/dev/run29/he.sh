#!/bin/bash
# The guards counting what a GPU holds in flight: held (this change) and
# prev (3e4b3e4), interleaved rounds of he_bench; dev machine.
set -e
out=docs/benchmarks/dev/run29
for i in ${ROUNDS:-1 2 3 4 5 6}; do
  for b in held prev; do
    HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/coexec-$b $out/he-$b-$i.json \
      mandelbrot:512x512 gather:100003 blackscholes:100003 > $out/he-$b-$i.txt 2>&1
  done
done
