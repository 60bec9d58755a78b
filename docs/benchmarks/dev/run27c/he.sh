#!/bin/bash
# gather and blackscholes again: final (a593ee4), new (063aa10, priming
# only) and old (ff22e3a), interleaved; dev machine.
set -e
out=docs/benchmarks/dev/run27c
for i in ${ROUNDS:-1 2 3 4}; do
  for b in final new old; do
    HE_REPS=3 HE_COLD=3 python3 scripts/he_bench.py /tmp/coexec-$b $out/he-$b-$i.json \
      gather:100003 blackscholes:100003 > $out/he-$b-$i.txt 2>&1
  done
done
